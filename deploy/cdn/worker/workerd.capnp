# The worker under workerd, Cloudflare's open-source Workers runtime, in front of a flashseat edge: what
# `go test ./deploy/ -run Worker` runs, and a way to try the worker locally:
#   ORIGIN=http://127.0.0.1:8080 npx workerd serve workerd.capnp --socket-addr http=127.0.0.1:8787
# The settings are read from the environment (see src/index.js); on Cloudflare, wrangler.toml sets them.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "gate", worker = .gate),
    # The origin is usually on a private or loopback address, which workerd's default outbound refuses.
    (name = "origin", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "gate")],
);

const gate :Workerd.Worker = (
  modules = [
    (name = "index.js", esModule = embed "src/index.js"),
    (name = "token.js", esModule = embed "src/token.js"),
    (name = "route.js", esModule = embed "src/route.js"),
  ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "ORIGIN", fromEnvironment = "ORIGIN"),
    (name = "JWKS_URL", fromEnvironment = "JWKS_URL"),
    (name = "JWKS_TTL_SECONDS", fromEnvironment = "JWKS_TTL_SECONDS"),
    (name = "JWKS_MIN_REFETCH_SECONDS", fromEnvironment = "JWKS_MIN_REFETCH_SECONDS"),
    (name = "TOKEN_LEEWAY_SECONDS", fromEnvironment = "TOKEN_LEEWAY_SECONDS"),
    (name = "QUEUE_STATE_TTL_SECONDS", fromEnvironment = "QUEUE_STATE_TTL_SECONDS"),
  ],
  globalOutbound = "origin",
);
