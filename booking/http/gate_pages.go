package http

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/pagekit"
)

// The door's page, /gate (docs/TICKETS.md "The door page"): staff check rotating ticket codes with the show's gate
// kit, online or not. Its service worker, /gate/sw.js, keeps the page and gateAssets for offline use; it is
// served here rather than under /assets/ because a worker may control only pages under its own path (and the
// Service-Worker-Allowed header widens that to /gate itself), and because its policy must let it fetch.

// gateAssets are the files the door page loads, its imports' imports included (TestGatePrecache keeps the list
// whole): the service worker caches them all when it installs.
var gateAssets = []string{"site.css", "gate.js", "api.js", "pow.js", "pow-worker.js", "dom.js", "ui.js",
	"codecheck.js", "codebytes.js", "scanner.js", "scanlog.js", "jsQR.js"}

//go:embed page/gate-sw.js
var gateWorker []byte

// gateWorkerFile is the worker with this release's asset URLs before its code, made once.
var gateWorkerFile = sync.OnceValues(func() (pagekit.File, error) {
	urls := make([]string, 0, len(gateAssets))
	for _, name := range gateAssets {
		u, err := fanSite.assets.URL(name)
		if err != nil {
			return pagekit.File{}, err
		}
		urls = append(urls, u)
	}
	list, err := json.Marshal(urls)
	if err != nil {
		return pagekit.File{}, err
	}
	body := fmt.Appendf(nil, "const VERSION = %s;\nconst PRECACHE = %s;\n%s", strconv.Quote(fanSite.assets.Version()), list, gateWorker)
	return pagekit.NewFile(body, "text/javascript; charset=utf-8"), nil
})

// gatePage renders /gate. It is the same for everyone (the staff token is typed into it), so a CDN may keep it.
func (s *Server) gatePage(c *fiber.Ctx) error {
	return s.render(c, fiber.StatusOK, "gate", Page{Title: "Door check", Scripts: []string{"gate.js"}})
}

// gateServiceWorker serves /gate/sw.js, revalidated on every load so that a release reaches the doors.
func (s *Server) gateServiceWorker(c *fiber.Ctx) error {
	f, err := gateWorkerFile()
	if err != nil {
		return err
	}
	c.Set("Service-Worker-Allowed", "/gate")
	// The worker's own policy: it fetches the page, its assets and the kit from this origin, and nothing else.
	c.Set("Content-Security-Policy", "default-src 'none'; connect-src 'self'")
	return pagekit.Send(c, f, "no-cache")
}
