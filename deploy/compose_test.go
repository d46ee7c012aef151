// Package deploy_test checks the deployment files against the binaries' own configuration loaders, so a value a
// service would refuse at start-up fails the test suite instead of a `docker compose up`.
package deploy_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	bookingapp "github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/booking/payment/sim"
	edgeapp "github.com/flashseat/flashseat/edge/app"
)

// loaders are the -check-config modes of the binaries, by the command a compose service runs.
var loaders = map[string]func(getenv func(string) string) error{
	"booking": func(g func(string) string) error { _, err := bookingapp.LoadConfig(g); return err },
	"edge":    func(g func(string) string) error { _, err := edgeapp.LoadConfig(g); return err },
	"paysim":  func(g func(string) string) error { _, err := sim.ConfigFromEnv(g); return err },
}

type composeFile struct {
	Services map[string]struct {
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Restart     string            `yaml:"restart"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(f.Services) == 0 {
		t.Fatal("docker-compose.yml: no services")
	}
	return f
}

// Every flashseat service in docker-compose.yml starts with the environment compose gives it: its binary's
// configuration loader (what -check-config runs) accepts exactly that environment and nothing else.
func TestComposeConfigs(t *testing.T) {
	t.Parallel()
	checked := 0
	for name, svc := range loadCompose(t).Services {
		if len(svc.Command) == 0 {
			continue
		}
		load, ok := loaders[svc.Command[0]]
		if !ok {
			continue
		}
		checked++
		env := svc.Environment
		if err := load(func(k string) string { return env[k] }); err != nil {
			t.Errorf("compose service %s (%s) would refuse its environment: %v", name, svc.Command[0], err)
		}
	}
	if checked < 3 {
		t.Errorf("checked %d flashseat services in docker-compose.yml, want booking, paysim and at least one edge", checked)
	}
}

// Every service restarts by itself and says when it is healthy.
func TestComposeRestartsAndHealth(t *testing.T) {
	t.Parallel()
	for name, svc := range loadCompose(t).Services {
		if svc.Restart == "" || svc.Restart == "no" {
			t.Errorf("compose service %s has no restart policy", name)
		}
		if svc.Healthcheck == nil || len(svc.Healthcheck.Test) == 0 {
			t.Errorf("compose service %s has no healthcheck", name)
		}
	}
}

// Where the docker client with its compose plugin is installed, compose itself validates the file.
func TestComposeConfigByDocker(t *testing.T) {
	t.Parallel()
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Skip("docker compose is not installed here; the file is still checked by the tests above")
	}
	out, err := exec.Command("docker", "compose", "-f", "../docker-compose.yml", "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatal(fmt.Sprintf("docker compose config: %v\n%s", err, out))
	}
}

// docker-compose.ha.yml, over the main file, gives every flashseat service the formation's multi-host URL, and
// each still starts with the environment compose then gives it.
func TestComposeHAConfigs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docker-compose.ha.yml")
	if err != nil {
		t.Fatal(err)
	}
	var ha composeFile
	if err := yaml.Unmarshal(raw, &ha); err != nil {
		t.Fatalf("docker-compose.ha.yml: %v", err)
	}
	checked := 0
	for name, svc := range loadCompose(t).Services {
		if len(svc.Command) == 0 || loaders[svc.Command[0]] == nil {
			continue
		}
		over, ok := ha.Services[name]
		if !ok {
			t.Errorf("compose service %s keeps the single server in docker-compose.ha.yml", name)
			continue
		}
		env := map[string]string{}
		maps.Copy(env, svc.Environment)
		maps.Copy(env, over.Environment)
		if u := env["DATABASE_URL"]; !strings.Contains(u, ",") || !strings.Contains(u, "target_session_attrs=read-write") {
			t.Errorf("compose service %s: DATABASE_URL %q names no formation", name, u)
		}
		if err := loaders[svc.Command[0]](func(k string) string { return env[k] }); err != nil {
			t.Errorf("compose service %s (%s) would refuse its HA environment: %v", name, svc.Command[0], err)
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("checked %d flashseat services, want booking, paysim and the edges", checked)
	}
}
