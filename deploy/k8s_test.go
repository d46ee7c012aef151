package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// kinds are the Kubernetes API types the manifests may use; each document is decoded strictly into its type, so
// a misspelt or misplaced field fails here instead of being dropped silently by the API server.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                     func() any { return &appsv1.Deployment{} },
	"apps/v1 StatefulSet":                    func() any { return &appsv1.StatefulSet{} },
	"v1 Service":                             func() any { return &corev1.Service{} },
	"v1 ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"policy/v1 PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2 HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
}

// kustomization is the part of kustomize's format the overlays use, decoded strictly too.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Patches   []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
	SecretGenerator []struct {
		Name    string `json:"name"`
		Options struct {
			DisableNameSuffixHash bool `json:"disableNameSuffixHash"`
		} `json:"options"`
		Literals []string `json:"literals"`
	} `json:"secretGenerator,omitempty"`
}

// object is one decoded manifest document.
type object struct {
	key  string // "apps/v1 Deployment booking"
	file string
	obj  any
}

func documents(t *testing.T, file string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func decode(t *testing.T, file string) []object {
	t.Helper()
	var out []object
	for _, doc := range documents(t, file) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		newObj, ok := kinds[meta.APIVersion+" "+meta.Kind]
		if !ok {
			t.Fatalf("%s: %s %s is not a kind these manifests are checked for", file, meta.APIVersion, meta.Kind)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s %s: %v", file, meta.Kind, meta.Metadata.Name, err)
		}
		out = append(out, object{key: meta.APIVersion + " " + meta.Kind + " " + meta.Metadata.Name, file: file, obj: obj})
	}
	return out
}

// build assembles an overlay the way kustomize would for what these files use: the resources of every
// kustomization reached, then each patch merged into the object of the same kind and name (containers and
// their env by name, ConfigMap data by key), plus the generated Secret's literals.
func build(t *testing.T, dir string) (objs map[string]object, secrets map[string]map[string]string) {
	t.Helper()
	objs, secrets = map[string]object{}, map[string]map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k kustomization
		if err := yaml.UnmarshalStrict(raw, &k); err != nil {
			t.Fatalf("%s/kustomization.yaml: %v", dir, err)
		}
		for _, r := range k.Resources {
			p := filepath.Join(dir, r)
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				walk(p)
				continue
			}
			for _, o := range decode(t, p) {
				if _, dup := objs[o.key]; dup {
					t.Fatalf("%s: %s defined twice", p, o.key)
				}
				objs[o.key] = o
			}
		}
		for _, p := range k.Patches {
			for _, patch := range decode(t, filepath.Join(dir, p.Path)) {
				base, ok := objs[patch.key]
				if !ok {
					t.Fatalf("%s patches %s, which no resource defines", p.Path, patch.key)
				}
				merge(t, base.obj, patch.obj)
			}
		}
		for _, g := range k.SecretGenerator {
			if !g.Options.DisableNameSuffixHash {
				t.Errorf("%s: secret %s gets a hash suffix, but the Deployments refer to it by its plain name", dir, g.Name)
			}
			m := map[string]string{}
			for _, l := range g.Literals {
				k, v, _ := strings.Cut(l, "=")
				m[k] = v
			}
			secrets[g.Name] = m
		}
	}
	walk(dir)
	return objs, secrets
}

func merge(t *testing.T, base, patch any) {
	t.Helper()
	switch b := base.(type) {
	case *appsv1.Deployment:
		p := patch.(*appsv1.Deployment)
		for _, pc := range p.Spec.Template.Spec.Containers {
			found := false
			for i := range b.Spec.Template.Spec.Containers {
				bc := &b.Spec.Template.Spec.Containers[i]
				if bc.Name != pc.Name {
					continue
				}
				found = true
				for _, e := range pc.Env {
					replaced := false
					for j := range bc.Env {
						if bc.Env[j].Name == e.Name {
							bc.Env[j], replaced = e, true
						}
					}
					if !replaced {
						bc.Env = append(bc.Env, e)
					}
				}
			}
			if !found {
				t.Fatalf("patch names container %s, which the Deployment %s lacks", pc.Name, b.Name)
			}
		}
	case *corev1.ConfigMap:
		for k, v := range patch.(*corev1.ConfigMap).Data {
			b.Data[k] = v
		}
	default:
		t.Fatalf("no merge for %T", base)
	}
}

// runtimeVars are read by the Go runtime or a main function rather than a configuration loader.
var runtimeVars = map[string]bool{"GOMEMLIMIT": true, "GOGC": true, "GOMAXPROCS": true, "LOG_LEVEL": true}

// reads returns the variables a binary's configuration loader looks at.
func reads(load func(func(string) string) error) map[string]bool {
	seen := map[string]bool{}
	_ = load(func(k string) string { seen[k] = true; return "" })
	return seen
}

// containerEnv resolves a container's environment as the kubelet would, with placeholder values for secrets the
// overlay does not generate (production's, which live only in the cluster).
func containerEnv(t *testing.T, c corev1.Container, objs map[string]object, secrets map[string]map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			o, ok := objs["v1 ConfigMap "+from.ConfigMapRef.Name]
			if !ok {
				t.Fatalf("container %s reads ConfigMap %s, which no resource defines", c.Name, from.ConfigMapRef.Name)
			}
			for k, v := range o.obj.(*corev1.ConfigMap).Data {
				env[k] = v
			}
		case from.SecretRef != nil:
			t.Errorf("container %s takes the whole Secret %s: name each key, so every variable is one it reads", c.Name, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			generated, inOverlay := secrets[ref.Name]
			v, ok := generated[ref.Key]
			switch {
			case ok:
				env[e.Name] = v
			case ref.Optional != nil && *ref.Optional:
				// absent from the Secret: the variable is unset
			case inOverlay:
				t.Errorf("container %s needs key %s of Secret %s, which the overlay does not generate", c.Name, ref.Key, ref.Name)
			default:
				env[e.Name] = "sk_test_placeholder_from_a_cluster_secret" // production: a Secret made in the cluster
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "536870912"
		}
	}
	return env
}

// Every overlay decodes strictly into the Kubernetes API types, and every flashseat container in it sets only
// variables its binary reads. In development, where the overlay holds every value, the binary's configuration
// loader accepts the container's whole environment.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	for _, overlay := range []string{"development", "production"} {
		t.Run(overlay, func(t *testing.T) {
			objs, secrets := build(t, filepath.Join("k8s", "overlays", overlay))
			var checked []string
			for _, o := range objs {
				d, ok := o.obj.(*appsv1.Deployment)
				if !ok {
					continue
				}
				checkPodSpec(t, d)
				for _, c := range d.Spec.Template.Spec.Containers {
					load, ok := loaders[c.Command[0]]
					if !ok {
						t.Errorf("Deployment %s runs %v, not a flashseat binary", d.Name, c.Command)
						continue
					}
					known := reads(load)
					env := containerEnv(t, c, objs, secrets)
					var unknown []string
					for k := range env {
						if !known[k] && !runtimeVars[k] {
							unknown = append(unknown, k)
						}
					}
					sort.Strings(unknown)
					if len(unknown) > 0 {
						t.Errorf("Deployment %s sets %v, which %s never reads", d.Name, unknown, c.Command[0])
					}
					if overlay == "development" {
						if err := load(func(k string) string { return env[k] }); err != nil {
							t.Errorf("Deployment %s: %s would refuse its environment: %v", d.Name, c.Command[0], err)
						}
					}
					checked = append(checked, d.Name)
				}
			}
			sort.Strings(checked)
			want := []string{"booking", "edge"}
			if overlay == "development" {
				want = []string{"booking", "edge", "paysim"}
			}
			if !reflect.DeepEqual(checked, want) {
				t.Errorf("checked Deployments %v, want %v", checked, want)
			}
			if _, ok := objs["policy/v1 PodDisruptionBudget edge"]; !ok {
				t.Error("no PodDisruptionBudget for the edge")
			}
			if _, ok := objs["autoscaling/v2 HorizontalPodAutoscaler edge"]; !ok {
				t.Error("no HorizontalPodAutoscaler for the edge")
			}
			svc := objs["v1 Service edge"].obj.(*corev1.Service)
			if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
				t.Error("the edge's Service does not keep client addresses (externalTrafficPolicy: Local)")
			}
		})
	}
}

// checkPodSpec holds every Deployment to what a rolling update and a hostile pod need: a startup probe, a
// preStop delay, a memory limit the Go runtime knows of, and a locked-down security context.
func checkPodSpec(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Errorf("Deployment %s: pod may run as root", d.Name)
	}
	for _, c := range ps.Containers {
		where := fmt.Sprintf("Deployment %s container %s", d.Name, c.Name)
		if c.StartupProbe == nil {
			t.Errorf("%s: no startupProbe", where)
		}
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			t.Errorf("%s: no preStop delay", where)
		}
		if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
			t.Errorf("%s: no memory limit", where)
		}
		gomem := false
		seen := map[string]bool{}
		for _, e := range c.Env {
			gomem = gomem || e.Name == "GOMEMLIMIT"
			if seen[e.Name] {
				t.Errorf("%s: %s is set twice (the later wins, silently)", where, e.Name)
			}
			seen[e.Name] = true
		}
		if !gomem {
			t.Errorf("%s: no GOMEMLIMIT", where)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
			len(sc.Capabilities.Drop) == 0 {
			t.Errorf("%s: security context is not locked down", where)
		}
	}
}

// The PostgreSQL the production overlay documents (deploy/k8s/postgres): a CloudNativePG Cluster with a
// synchronous standby and a PgBouncer Pooler in transaction mode, the shape docs/SCALING.md describes. The
// operator's own types are not vendored here; the fields that matter are read and held to it.
func TestPostgresOperatorManifests(t *testing.T) {
	t.Parallel()
	var found []string
	for _, doc := range documents(t, filepath.Join("k8s", "postgres", "cluster.yaml")) {
		var m struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				Instances      int `json:"instances"`
				MinSyncReplica int `json:"minSyncReplicas"`
				Cluster        struct {
					Name string `json:"name"`
				} `json:"cluster"`
				Type      string `json:"type"`
				PgBouncer struct {
					PoolMode string `json:"poolMode"`
				} `json:"pgbouncer"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if m.APIVersion != "postgresql.cnpg.io/v1" {
			t.Errorf("%s: apiVersion %s, want postgresql.cnpg.io/v1", m.Kind, m.APIVersion)
		}
		switch m.Kind {
		case "Cluster":
			if m.Spec.Instances < 2 || m.Spec.MinSyncReplica < 1 {
				t.Errorf("Cluster: %d instances, %d synchronous, want a primary and a synchronous standby at least",
					m.Spec.Instances, m.Spec.MinSyncReplica)
			}
		case "Pooler":
			if m.Spec.Type != "rw" || m.Spec.PgBouncer.PoolMode != "transaction" {
				t.Errorf("Pooler: type %s, pool mode %s, want rw and transaction", m.Spec.Type, m.Spec.PgBouncer.PoolMode)
			}
		}
		found = append(found, m.Kind)
	}
	sort.Strings(found)
	if !reflect.DeepEqual(found, []string{"Cluster", "Pooler"}) {
		t.Errorf("got %v, want a Cluster and a Pooler", found)
	}
}
