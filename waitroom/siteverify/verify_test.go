package siteverify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/waitroom/siteverify"
	"github.com/flashseat/flashseat/waitroom/siteverify/siteverifytest"
)

var allProviders = []string{siteverify.Turnstile, siteverify.HCaptcha, siteverify.ReCAPTCHA}

// TestVerify runs every case against a local server speaking each provider's siteverify.
func TestVerify(t *testing.T) {
	t.Parallel()
	duplicate := map[string]string{siteverify.Turnstile: "timeout-or-duplicate",
		siteverify.HCaptcha: "invalid-or-already-seen-response", siteverify.ReCAPTCHA: "timeout-or-duplicate"}
	type check struct {
		srv *siteverifytest.Server
		v   *siteverify.Verifier
	}
	tests := []struct {
		name string
		// configure changes the Verifier's configuration before the Verifier is made.
		configure func(t *testing.T, c *siteverify.Config)
		// run verifies; its error is compared with want.
		run      func(ctx context.Context, t *testing.T, c check) error
		want     error
		wantCode string // an error code the message must carry; "duplicate" is the provider's own
	}{
		{name: "issued token passes",
			run: func(ctx context.Context, t *testing.T, c check) error {
				return c.v.Verify(ctx, c.srv.Token(), "203.0.113.7")
			}},
		{name: "pass token passes twice",
			run: func(ctx context.Context, t *testing.T, c check) error {
				if err := c.v.Verify(ctx, siteverifytest.Pass, ""); err != nil {
					t.Fatalf("first: got %v, want nil", err)
				}
				return c.v.Verify(ctx, siteverifytest.Pass, "")
			}},
		{name: "unknown token rejected", want: siteverify.ErrRejected, wantCode: "invalid-input-response",
			run: func(ctx context.Context, t *testing.T, c check) error {
				return c.v.Verify(ctx, "made-up-by-a-bot", "203.0.113.7")
			}},
		{name: "reused token rejected", want: siteverify.ErrRejected, wantCode: "duplicate",
			run: func(ctx context.Context, t *testing.T, c check) error {
				tok := c.srv.Token()
				if err := c.v.Verify(ctx, tok, ""); err != nil {
					t.Fatalf("first use: got %v, want nil", err)
				}
				return c.v.Verify(ctx, tok, "")
			}},
		{name: "oversized token rejected unsent", want: siteverify.ErrRejected,
			run: func(ctx context.Context, t *testing.T, c check) error {
				err := c.v.Verify(ctx, strings.Repeat("x", 1<<20), "")
				if n := len(c.srv.Requests()); n != 0 {
					t.Errorf("requests sent: got %d, want 0", n)
				}
				return err
			}},
		{name: "wrong secret is the deployment's fault", want: siteverify.ErrUnavailable,
			wantCode:  "invalid-input-secret",
			configure: func(_ *testing.T, c *siteverify.Config) { c.Secret = "someone-elses-secret" },
			run: func(ctx context.Context, t *testing.T, c check) error {
				return c.v.Verify(ctx, c.srv.Token(), "")
			}},
		{name: "missing response not sent", want: siteverify.ErrMissing,
			run: func(ctx context.Context, t *testing.T, c check) error {
				err := c.v.Verify(ctx, "", "203.0.113.7")
				if n := len(c.srv.Requests()); n != 0 {
					t.Errorf("requests sent: got %d, want 0", n)
				}
				return err
			}},
		{name: "provider answers 500", want: siteverify.ErrUnavailable,
			run: func(ctx context.Context, t *testing.T, c check) error {
				c.srv.Fail(siteverifytest.Status500)
				return c.v.Verify(ctx, c.srv.Token(), "")
			}},
		{name: "provider answers html", want: siteverify.ErrUnavailable,
			run: func(ctx context.Context, t *testing.T, c check) error {
				c.srv.Fail(siteverifytest.NotJSON)
				return c.v.Verify(ctx, c.srv.Token(), "")
			}},
		{name: "provider hangs past the timeout", want: context.DeadlineExceeded,
			configure: func(_ *testing.T, c *siteverify.Config) { c.Timeout = 200 * time.Millisecond },
			run: func(ctx context.Context, t *testing.T, c check) error {
				c.srv.Fail(siteverifytest.Hang)
				start := time.Now()
				err := c.v.Verify(ctx, c.srv.Token(), "")
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("gave up after %s, want about the 200ms timeout", d)
				}
				if !errors.Is(err, siteverify.ErrUnavailable) {
					t.Errorf("got %v, want ErrUnavailable too", err)
				}
				return err
			}},
		{name: "provider unreachable", want: siteverify.ErrUnavailable,
			configure: func(t *testing.T, c *siteverify.Config) { c.VerifyURL = "http://" + storetest.DeadAddr(t) },
			run: func(ctx context.Context, t *testing.T, c check) error {
				return c.v.Verify(ctx, c.srv.Token(), "")
			}},
		{name: "caller cancels", want: context.Canceled,
			run: func(ctx context.Context, t *testing.T, c check) error {
				c.srv.Fail(siteverifytest.Hang)
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
				start := time.Now()
				err := c.v.Verify(ctx, c.srv.Token(), "")
				if d := time.Since(start); d > time.Second {
					t.Errorf("returned %s after the cancellation's 50ms", d)
				}
				return err
			}},
		{name: "hostname matches", configure: func(_ *testing.T, c *siteverify.Config) {
			c.Hostname = strings.ToUpper(siteverifytest.Hostname)
		}, run: func(ctx context.Context, t *testing.T, c check) error {
			return c.v.Verify(ctx, c.srv.Token(), "")
		}},
		{name: "token solved on another hostname", want: siteverify.ErrRejected,
			configure: func(_ *testing.T, c *siteverify.Config) { c.Hostname = "tickets.example" },
			run: func(ctx context.Context, t *testing.T, c check) error {
				return c.v.Verify(ctx, c.srv.Token(), "")
			}},
		{name: "request carries the protocol's fields",
			run: func(ctx context.Context, t *testing.T, c check) error {
				tok := c.srv.Token()
				err := c.v.Verify(ctx, tok, "2001:db8::7")
				reqs := c.srv.Requests()
				if len(reqs) != 1 {
					t.Fatalf("requests: got %d, want 1", len(reqs))
				}
				got := reqs[0]
				if got.ContentType != "application/x-www-form-urlencoded" || got.Secret != siteverifytest.Secret ||
					got.Response != tok || got.RemoteIP != "2001:db8::7" {
					t.Errorf("request: got %+v, want a form with the secret, the token and remoteip", got)
				}
				wantKey := ""
				if c.v.Widget().Provider == siteverify.HCaptcha {
					wantKey = siteverifytest.SiteKey
				}
				if got.SiteKey != wantKey {
					t.Errorf("sitekey: got %q, want %q (hCaptcha's alone)", got.SiteKey, wantKey)
				}
				return err
			}},
		{name: "no remoteip when unknown",
			run: func(ctx context.Context, t *testing.T, c check) error {
				err := c.v.Verify(ctx, c.srv.Token(), "")
				if reqs := c.srv.Requests(); len(reqs) != 1 || reqs[0].RemoteIP != "" {
					t.Errorf("requests: got %+v, want one without remoteip", reqs)
				}
				return err
			}},
	}
	for _, p := range allProviders {
		for _, tt := range tests {
			t.Run(p+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				srv := siteverifytest.New(t, siteverifytest.WithProvider(p))
				cfg := srv.Config()
				if tt.configure != nil {
					tt.configure(t, &cfg)
				}
				v, err := siteverify.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err = tt.run(ctx, t, check{srv: srv, v: v})
				switch {
				case tt.want == nil && err != nil:
					t.Fatalf("got %v, want nil", err)
				case tt.want != nil && !errors.Is(err, tt.want):
					t.Fatalf("got %v, want %v", err, tt.want)
				}
				code := tt.wantCode
				if code == "duplicate" {
					code = duplicate[p]
				}
				if code != "" && !strings.Contains(err.Error(), code) {
					t.Errorf("got %q, want the error code %s in it", err, code)
				}
				if err != nil && strings.Contains(err.Error(), cfg.Secret) {
					t.Errorf("the error %q quotes the secret", err)
				}
			})
		}
	}
}
