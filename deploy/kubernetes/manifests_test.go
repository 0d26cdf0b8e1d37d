package kubernetes_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The files under test, relative to this directory (go test's working
// directory).
const (
	kustomizationFile = "kustomization.yaml"
	namespaceFile     = "namespace.yaml"
	serviceAccount    = "serviceaccount.yaml"
	deploymentFile    = "deployment.yaml"
	serviceFile       = "service.yaml"
	pdbFile           = "pdb.yaml"
	netpolFile        = "networkpolicy.yaml"
	configFile        = "config/tollgate.yaml"
	componentDir      = "components/prometheus-operator"
	serviceMonitor    = componentDir + "/servicemonitor.yaml"
	readmeFile        = "README.md"
	repoRoot          = "../.."

	// The namespace kustomization.yaml puts everything in.
	namespace = "tollgate"
	// The Secret the README tells operators to create.
	secretName = "tollgate"
	// The label the auth system's pods carry to be let in.
	clientLabel = "tollgate-client"
	// The image's user and group (distroless nonroot).
	nonroot = 65532
	// The port tollgate listens on.
	port = 8080
)

// decodeStrict reads one YAML document from file into obj, refusing unknown
// fields and duplicate keys, and checks its apiVersion and kind.
func decodeStrict(t *testing.T, file string, obj any, apiVersion, kind string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	decodeBytes(t, file, data, obj, apiVersion, kind)
}

func decodeBytes(t *testing.T, name string, data []byte, obj any, apiVersion, kind string) {
	t.Helper()
	if docs := splitDocs(data); len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", name, len(docs))
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if tm.APIVersion != apiVersion || tm.Kind != kind {
		t.Fatalf("%s: apiVersion %q kind %q, want %q %q", name, tm.APIVersion, tm.Kind, apiVersion, kind)
	}
}

// splitDocs splits a YAML stream at its "---" lines, dropping empty
// documents (comments only).
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err == nil && v == nil {
			continue
		}
		docs = append(docs, []byte(doc))
	}
	return docs
}

// manifests holds every manifest, decoded.
type manifests struct {
	ns     corev1.Namespace
	sa     corev1.ServiceAccount
	deploy appsv1.Deployment
	svc    corev1.Service
	pdb    policyv1.PodDisruptionBudget
	netpol networkingv1.NetworkPolicy
	sm     monitoringv1.ServiceMonitor
}

func load(t *testing.T) *manifests {
	t.Helper()
	var m manifests
	decodeStrict(t, namespaceFile, &m.ns, "v1", "Namespace")
	decodeStrict(t, serviceAccount, &m.sa, "v1", "ServiceAccount")
	decodeStrict(t, deploymentFile, &m.deploy, "apps/v1", "Deployment")
	decodeStrict(t, serviceFile, &m.svc, "v1", "Service")
	decodeStrict(t, pdbFile, &m.pdb, "policy/v1", "PodDisruptionBudget")
	decodeStrict(t, netpolFile, &m.netpol, "networking.k8s.io/v1", "NetworkPolicy")
	decodeStrict(t, serviceMonitor, &m.sm, "monitoring.coreos.com/v1", "ServiceMonitor")
	return &m
}

// container is the Deployment's only container.
func (m *manifests) container(t *testing.T) *corev1.Container {
	t.Helper()
	cs := m.deploy.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("deployment: %d containers, want 1", len(cs))
	}
	return &cs[0]
}

func (m *manifests) podLabels() labels.Set { return m.deploy.Spec.Template.Labels }

func (m *manifests) env(t *testing.T) map[string]corev1.EnvVar {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	for _, e := range m.container(t).Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("deployment: env %s is set twice", e.Name)
		}
		env[e.Name] = e
	}
	return env
}

// secretVolume is the volume from the Secret and where it is mounted.
func (m *manifests) secretVolume(t *testing.T) (*corev1.SecretVolumeSource, string) {
	t.Helper()
	var src *corev1.SecretVolumeSource
	var name string
	for _, v := range m.deploy.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			if src != nil {
				t.Fatal("deployment: more than one Secret volume")
			}
			src, name = v.Secret, v.Name
		}
	}
	if src == nil {
		t.Fatal("deployment: no Secret volume")
	}
	for _, vm := range m.container(t).VolumeMounts {
		if vm.Name == name {
			if !vm.ReadOnly {
				t.Errorf("deployment: the Secret volume is mounted writable")
			}
			return src, vm.MountPath
		}
	}
	t.Fatalf("deployment: Secret volume %q is not mounted", name)
	return nil, ""
}

// secretFiles maps each file the Secret volume puts in the container (its
// absolute path) to the Secret key it holds.
func (m *manifests) secretFiles(t *testing.T) map[string]string {
	t.Helper()
	src, dir := m.secretVolume(t)
	files := map[string]string{}
	for _, it := range src.Items {
		files[path.Join(dir, it.Path)] = it.Key
	}
	return files
}

// resolvePort returns the container port a probe or Service names.
func (m *manifests) resolvePort(t *testing.T, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range m.container(t).Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Fatalf("deployment: no container port %s", p.String())
	return 0
}

// readConfig reads config/tollgate.yaml as plain YAML.
func readConfig(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf("%s: %v", configFile, err)
	}
	if cfg == nil {
		t.Fatalf("%s: empty", configFile)
	}
	return cfg
}

// kustomization is the part of kustomize's Kustomization this directory
// uses; any other field is refused, so nothing goes unchecked.
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Namespace          string      `json:"namespace,omitempty"`
	Resources          []string    `json:"resources,omitempty"`
	Components         []string    `json:"components,omitempty"`
	ConfigMapGenerator []generator `json:"configMapGenerator,omitempty"`
}

type generator struct {
	Name    string   `json:"name"`
	Files   []string `json:"files"`
	Options struct {
		Labels map[string]string `json:"labels,omitempty"`
	} `json:"options"`
}

func readKustomization(t *testing.T, file string) kustomization {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return k
}

// yamlFiles lists the .yaml files directly in dir.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	return names
}

// TestKustomization_ListsEveryManifest: the base lists every manifest in
// this directory and nothing else, its generator's file exists, and the
// component lists its own manifests.
func TestKustomization_ListsEveryManifest(t *testing.T) {
	k := readKustomization(t, kustomizationFile)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s: apiVersion %q kind %q", kustomizationFile, k.APIVersion, k.Kind)
	}
	if k.Namespace != namespace {
		t.Errorf("%s: namespace %q, want %q", kustomizationFile, k.Namespace, namespace)
	}
	want := slices.DeleteFunc(yamlFiles(t, "."), func(f string) bool { return f == kustomizationFile })
	got := slices.Clone(k.Resources)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: resources %v, want every manifest here: %v", kustomizationFile, got, want)
	}
	if len(k.Components) != 0 {
		t.Errorf("%s: components %v are on by default; the ServiceMonitor needs the operator's CRDs, so it stays opt-in", kustomizationFile, k.Components)
	}

	if len(k.ConfigMapGenerator) != 1 {
		t.Fatalf("%s: %d configMapGenerators, want 1", kustomizationFile, len(k.ConfigMapGenerator))
	}
	g := k.ConfigMapGenerator[0]
	if g.Name != "tollgate-config" || !slices.Equal(g.Files, []string{"tollgate.yaml=" + configFile}) {
		t.Errorf("%s: configMapGenerator %s %v, want tollgate-config from %s", kustomizationFile, g.Name, g.Files, configFile)
	}
	if _, err := os.Stat(configFile); err != nil {
		t.Error(err)
	}

	c := readKustomization(t, filepath.Join(componentDir, kustomizationFile))
	if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
		t.Errorf("%s: apiVersion %q kind %q, want a Component", componentDir, c.APIVersion, c.Kind)
	}
	want = slices.DeleteFunc(yamlFiles(t, componentDir), func(f string) bool { return f == kustomizationFile })
	got = slices.Sorted(slices.Values(c.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("%s: resources %v, want %v", componentDir, got, want)
	}
	dirs, _ := filepath.Glob("components/*")
	if !slices.Equal(dirs, []string{componentDir}) {
		t.Errorf("components: %v, want only %s (add a new one to this test)", dirs, componentDir)
	}
}

// TestManifests_NoSecretIsCommitted: no manifest is a Secret and none
// holds a stringData or data block of one.
func TestManifests_NoSecretIsCommitted(t *testing.T) {
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range splitDocs(data) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if tm.Kind == "Secret" {
				t.Errorf("%s: a Secret is committed; create it with kubectl (README.md)", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestManifests_DecodeStrictly: every manifest decodes into its typed API
// struct with no unknown field, and carries the app label.
func TestManifests_DecodeStrictly(t *testing.T) {
	m := load(t)
	for name, meta := range map[string]metav1.ObjectMeta{
		namespaceFile: m.ns.ObjectMeta, serviceAccount: m.sa.ObjectMeta, deploymentFile: m.deploy.ObjectMeta,
		serviceFile: m.svc.ObjectMeta, pdbFile: m.pdb.ObjectMeta, netpolFile: m.netpol.ObjectMeta, serviceMonitor: m.sm.ObjectMeta,
	} {
		if meta.Labels["app.kubernetes.io/name"] != "tollgate" {
			t.Errorf("%s: no app.kubernetes.io/name: tollgate label", name)
		}
	}
	if m.ns.Name != namespace {
		t.Errorf("%s: name %q, want %q", namespaceFile, m.ns.Name, namespace)
	}
	if m.ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("%s: Pod Security Admission does not enforce restricted", namespaceFile)
	}
}

// TestDeployment_SecurityContext: the restricted profile, in the pod's and
// the container's securityContext.
func TestDeployment_SecurityContext(t *testing.T) {
	m := load(t)
	spec := m.deploy.Spec.Template.Spec
	pod := spec.SecurityContext
	if pod == nil {
		t.Fatal("deployment: no pod securityContext")
	}
	c := m.container(t)
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("deployment: no container securityContext")
	}
	is := func(what string, b *bool, want bool) {
		t.Helper()
		if b == nil || *b != want {
			t.Errorf("deployment: %s is not %v", what, want)
		}
	}
	id := func(what string, n *int64) {
		t.Helper()
		if n == nil || *n != nonroot {
			t.Errorf("deployment: %s is not %d", what, nonroot)
		}
	}
	is("pod runAsNonRoot", pod.RunAsNonRoot, true)
	id("pod runAsUser", pod.RunAsUser)
	id("pod runAsGroup", pod.RunAsGroup)
	id("pod fsGroup", pod.FSGroup)
	if pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("deployment: pod seccompProfile is not RuntimeDefault")
	}
	is("container runAsNonRoot", sc.RunAsNonRoot, true)
	id("container runAsUser", sc.RunAsUser)
	id("container runAsGroup", sc.RunAsGroup)
	is("readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem, true)
	is("allowPrivilegeEscalation", sc.AllowPrivilegeEscalation, false)
	is("privileged", sc.Privileged, false)
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Error("deployment: capabilities are not drop [ALL], add none")
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("deployment: container seccompProfile is not RuntimeDefault")
	}
	is("pod automountServiceAccountToken", spec.AutomountServiceAccountToken, false)
	is("serviceAccount automountServiceAccountToken", m.sa.AutomountServiceAccountToken, false)
	if spec.ServiceAccountName != m.sa.Name {
		t.Errorf("deployment: serviceAccountName %q, want %q (serviceaccount.yaml)", spec.ServiceAccountName, m.sa.Name)
	}
	is("enableServiceLinks (a Service named tollgate would set TOLLGATE_* variables)", spec.EnableServiceLinks, false)
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("deployment: uses a host namespace")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("deployment: volume %s is a hostPath", v.Name)
		}
	}
	if len(spec.InitContainers) != 0 {
		t.Error("deployment: init containers are not checked here")
	}
}

// TestDeployment_ImagePinned: the image names a release tag (or a digest),
// never latest or no tag.
func TestDeployment_ImagePinned(t *testing.T) {
	c := load(t).container(t)
	re := regexp.MustCompile(`^ghcr\.io/tollgate-auth/tollgate(:v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)?(@sha256:[0-9a-f]{64})?$`)
	if !re.MatchString(c.Image) || !strings.ContainsAny(c.Image, ":@") {
		t.Errorf("deployment: image %q is not pinned to a version tag or digest", c.Image)
	}
	if c.ImagePullPolicy == corev1.PullAlways {
		t.Error("deployment: imagePullPolicy Always with a pinned tag")
	}
}

// TestDeployment_Probes: liveness, readiness and startup all ask /healthz
// on the container's port; readiness is deliberately not /readyz.
func TestDeployment_Probes(t *testing.T) {
	m := load(t)
	c := m.container(t)
	for name, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("deployment: %s is not an httpGet probe", name)
			continue
		}
		if p.HTTPGet.Path != "/healthz" {
			// README.md "Operating it": every instance shares one Redis, so a
			// readiness probe on /readyz takes every pod out of the Service at
			// once when Redis is down or full, and callers then fall back to
			// their own fail mode instead of tollgate's. Route on /healthz,
			// alert on /readyz.
			t.Errorf("deployment: %s asks %q, want /healthz", name, p.HTTPGet.Path)
		}
		if got := m.resolvePort(t, p.HTTPGet.Port); got != port {
			t.Errorf("deployment: %s on port %d, want %d", name, got, port)
		}
		if p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP {
			t.Errorf("deployment: %s scheme %s without tls in the config", name, p.HTTPGet.Scheme)
		}
	}
	if l := c.LivenessProbe; l != nil && l.PeriodSeconds*l.FailureThreshold < 20 {
		t.Errorf("deployment: liveness restarts after %ds without an answer; a pod slowed by an attack would be restarted", l.PeriodSeconds*l.FailureThreshold)
	}
}

// TestDeployment_ResourcesAndReplicas: requests and limits are set (memory
// limit = request, GOMEMLIMIT under it), replicas >= 2 spread over nodes.
func TestDeployment_ResourcesAndReplicas(t *testing.T) {
	m := load(t)
	if r := m.deploy.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("deployment: replicas %v, want at least 2", r)
	}
	res := m.container(t).Resources
	for _, q := range []struct {
		what string
		l    corev1.ResourceList
		name corev1.ResourceName
	}{
		{"requests.cpu", res.Requests, corev1.ResourceCPU},
		{"requests.memory", res.Requests, corev1.ResourceMemory},
		{"limits.cpu", res.Limits, corev1.ResourceCPU},
		{"limits.memory", res.Limits, corev1.ResourceMemory},
	} {
		if v, ok := q.l[q.name]; !ok || v.Sign() <= 0 {
			t.Errorf("deployment: resources.%s is not set", q.what)
		}
	}
	memLimit := res.Limits[corev1.ResourceMemory]
	if memReq := res.Requests[corev1.ResourceMemory]; memReq.Cmp(memLimit) != 0 {
		t.Errorf("deployment: memory request %s != limit %s", memReq.String(), memLimit.String())
	}
	cpuReq, cpuLimit := res.Requests[corev1.ResourceCPU], res.Limits[corev1.ResourceCPU]
	if cpuReq.Cmp(cpuLimit) > 0 {
		t.Errorf("deployment: cpu request %s > limit %s", cpuReq.String(), cpuLimit.String())
	}
	// The pool is 10 connections per GOMAXPROCS, which Go takes from the
	// CPU limit: a whole number of cores keeps it what the comment says.
	if cpuLimit.MilliValue()%1000 != 0 {
		t.Errorf("deployment: cpu limit %s is not a whole number of cores", cpuLimit.String())
	}

	gml, ok := m.env(t)["GOMEMLIMIT"]
	if !ok {
		t.Fatal("deployment: GOMEMLIMIT is not set")
	}
	n, err := parseGoMemLimit(gml.Value)
	if err != nil {
		t.Fatalf("deployment: GOMEMLIMIT %q: %v", gml.Value, err)
	}
	if lim := memLimit.Value(); n >= lim || n < lim/2 {
		t.Errorf("deployment: GOMEMLIMIT %d bytes, want below limits.memory (%d) and above half of it", n, lim)
	}
	// The recall and the fallback's byte budget alone are 64 MiB (README.md).
	if min := resource.MustParse("256Mi"); memLimit.Cmp(min) < 0 {
		t.Errorf("deployment: limits.memory %s is under the 256Mi the fallback and the recall can take", memLimit.String())
	}

	spread := false
	for _, tsc := range m.deploy.Spec.Template.Spec.TopologySpreadConstraints {
		sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil {
			t.Fatal(err)
		}
		if tsc.TopologyKey == "kubernetes.io/hostname" && tsc.WhenUnsatisfiable == corev1.DoNotSchedule && tsc.MaxSkew == 1 && sel.Matches(m.podLabels()) {
			spread = true
		}
	}
	if !spread {
		t.Error("deployment: no topology spread over kubernetes.io/hostname (DoNotSchedule) selecting its own pods")
	}
	ru := m.deploy.Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Error("deployment: a rollout may take a replica down before its successor is up (maxUnavailable != 0)")
	}
}

// parseGoMemLimit reads a GOMEMLIMIT value: a number of bytes with an
// optional B, KiB, MiB, GiB or TiB suffix.
func parseGoMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = num, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}

// TestDeployment_SecretsOnlyAsFiles: no variable holds a secret value; each
// *_FILE variable names a file of the Secret volume; the Secret's keys are
// the ones README.md's kubectl create secret command makes.
func TestDeployment_SecretsOnlyAsFiles(t *testing.T) {
	m := load(t)
	c := m.container(t)
	if len(c.EnvFrom) != 0 {
		t.Error("deployment: envFrom would put a ConfigMap's or Secret's values in the environment")
	}
	files := m.secretFiles(t)
	secretish := regexp.MustCompile(`SECRET|PASSWORD|PASS|TOKEN|KEY`)
	for name, e := range m.env(t) {
		if e.ValueFrom != nil {
			t.Errorf("deployment: env %s comes from valueFrom; secrets only as files, other values as literals", name)
		}
		switch name {
		case "TOLLGATE_SECRET", "TOLLGATE_REDIS_PASSWORD", "TOLLGATE_TOKEN":
			t.Errorf("deployment: env %s holds a secret value; use its _FILE variable", name)
		}
		if !secretish.MatchString(name) {
			continue
		}
		if !strings.HasSuffix(name, "_FILE") {
			t.Errorf("deployment: env %s looks like a secret value; only *_FILE variables may name secrets", name)
			continue
		}
		if _, ok := files[e.Value]; !ok {
			t.Errorf("deployment: env %s = %q is not a file of the Secret volume (%v)", name, e.Value, files)
		}
	}
	env := m.env(t)
	for _, want := range []string{"TOLLGATE_SECRET_FILE", "TOLLGATE_REDIS_PASSWORD_FILE"} {
		if _, ok := env[want]; !ok {
			t.Errorf("deployment: %s is not set", want)
		}
	}
	u, err := url.Parse(env["TOLLGATE_REDIS_URL"].Value)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		t.Fatalf("deployment: TOLLGATE_REDIS_URL %q is not a redis:// URL", env["TOLLGATE_REDIS_URL"].Value)
	}
	if _, set := u.User.Password(); set {
		t.Error("deployment: TOLLGATE_REDIS_URL holds a password; it belongs in TOLLGATE_REDIS_PASSWORD_FILE")
	}
	if _, p, _ := net.SplitHostPort(u.Host); p != "6379" {
		t.Errorf("deployment: Redis port %q; networkpolicy.yaml allows 6379", p)
	}

	src, _ := m.secretVolume(t)
	if src.SecretName != secretName {
		t.Errorf("deployment: Secret %q, want %q (README.md)", src.SecretName, secretName)
	}
	if src.Optional != nil && *src.Optional {
		t.Error("deployment: the Secret volume is optional: pods would start without their secret")
	}
	if src.DefaultMode == nil || *src.DefaultMode&0o007 != 0 {
		t.Error("deployment: the Secret's files are readable by others (defaultMode)")
	}
	for _, it := range src.Items {
		if it.Mode != nil && *it.Mode&0o007 != 0 {
			t.Errorf("deployment: Secret file %s readable by others", it.Path)
		}
	}
	var keys []string
	for _, k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := readmeSecretKeys(t); !slices.Equal(got, keys) {
		t.Errorf("README.md creates the Secret with keys %v; deployment.yaml mounts %v", got, keys)
	}
}

// readmeSecretKeys returns the keys of README.md's kubectl create secret
// generic command, sorted.
func readmeSecretKeys(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	// The command, with its continuation lines joined.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var cmd string
	for line := range strings.Lines(text) {
		if strings.Contains(line, "create secret generic "+secretName) {
			if cmd != "" {
				t.Fatal("README.md: more than one kubectl create secret generic command")
			}
			cmd = line
		}
	}
	if cmd == "" {
		t.Fatalf("README.md: no `kubectl create secret generic %s` command", secretName)
	}
	if !strings.Contains(cmd, "-n "+namespace) && !strings.Contains(cmd, "--namespace "+namespace) && !strings.Contains(cmd, "--namespace="+namespace) {
		t.Errorf("README.md: the Secret is not created in namespace %s: %s", namespace, cmd)
	}
	var keys []string
	for _, mm := range regexp.MustCompile(`--from-file=([^=\s]+)=\S+`).FindAllStringSubmatch(cmd, -1) {
		keys = append(keys, mm[1])
	}
	slices.Sort(keys)
	return keys
}

// TestDeployment_TerminationCoversTheDrain: the grace period covers the
// preStop pause and the config's shutdown timeout.
func TestDeployment_TerminationCoversTheDrain(t *testing.T) {
	m := load(t)
	spec := m.deploy.Spec.Template.Spec
	shutdown := 20 * time.Second // tollgate's default
	if tm, ok := readConfig(t)["timeouts"].(map[string]any); ok {
		if s, ok := tm["shutdown"].(string); ok {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s: timeouts.shutdown %q: %v", configFile, s, err)
			}
			shutdown = d
		}
	}
	var pause time.Duration
	c := m.container(t)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		ps := c.Lifecycle.PreStop
		if ps.Exec != nil {
			t.Error("deployment: an exec preStop hook; the image has no shell or sleep")
		}
		if ps.Sleep != nil {
			pause = time.Duration(ps.Sleep.Seconds) * time.Second
		}
	}
	var grace time.Duration
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace < pause+shutdown+time.Second {
		t.Errorf("deployment: terminationGracePeriodSeconds %v does not cover the preStop pause (%v) + timeouts.shutdown (%v)", grace, pause, shutdown)
	}
}

// TestService_PDB_NetworkPolicy_SelectThePods: every selector matches the
// Deployment's pods, and the Deployment's own selector matches its template.
func TestService_PDB_NetworkPolicy_SelectThePods(t *testing.T) {
	m := load(t)
	pods := m.podLabels()
	sel, err := metav1.LabelSelectorAsSelector(m.deploy.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pods) {
		t.Errorf("deployment: selector %v does not match its pods %v", m.deploy.Spec.Selector, pods)
	}
	if s := m.svc.Spec.Selector; len(s) == 0 || !labels.SelectorFromSet(s).Matches(pods) {
		t.Errorf("service: selector %v does not match the pods %v", s, pods)
	}
	named := false
	for _, p := range m.svc.Spec.Ports {
		if got := m.resolvePort(t, p.TargetPort); got != port {
			t.Errorf("service: port %s targets %d", p.Name, got)
		}
		named = named || p.Name == "http"
	}
	if !named {
		t.Error("service: no port named http (the ServiceMonitor scrapes it)")
	}

	sel, err = metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pods) {
		t.Errorf("pdb: selector %v does not match the pods %v", m.pdb.Spec.Selector, pods)
	}
	if mi := m.pdb.Spec.MinAvailable; mi == nil || mi.Type != intstr.Int || mi.IntVal != 1 {
		t.Errorf("pdb: minAvailable %v, want 1", mi)
	}
	if m.pdb.Spec.MaxUnavailable != nil {
		t.Error("pdb: both minAvailable and maxUnavailable")
	}

	sel, err = metav1.LabelSelectorAsSelector(&m.netpol.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(pods) {
		t.Errorf("networkpolicy: podSelector %v does not match the pods %v", m.netpol.Spec.PodSelector, pods)
	}

	sel, err = metav1.LabelSelectorAsSelector(&m.sm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(m.svc.Labels)) {
		t.Errorf("servicemonitor: selector %v does not match the Service's labels %v", m.sm.Spec.Selector, m.svc.Labels)
	}
}

// TestNetworkPolicy_OnlyClientsPrometheusRedisAndDNS: in, only the auth
// system's pods and Prometheus, on 8080; out, only Redis and DNS.
func TestNetworkPolicy_OnlyClientsPrometheusRedisAndDNS(t *testing.T) {
	np := load(t).netpol.Spec
	if !slices.Equal(np.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("networkpolicy: policyTypes %v, want [Ingress Egress]", np.PolicyTypes)
	}
	type peerKind int
	const (
		other peerKind = iota
		client
		prometheus
		redis
		dns
	)
	matches := func(s *metav1.LabelSelector, set labels.Set) bool {
		if s == nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(s)
		return err == nil && !sel.Empty() && sel.Matches(set)
	}
	kind := func(p networkingv1.NetworkPolicyPeer) peerKind {
		if p.IPBlock != nil || p.PodSelector == nil {
			return other
		}
		switch {
		case p.NamespaceSelector == nil && matches(p.PodSelector, labels.Set{clientLabel: "true"}) && len(p.PodSelector.MatchLabels) == 1:
			return client
		case p.NamespaceSelector == nil && matches(p.PodSelector, labels.Set{"app.kubernetes.io/name": "redis"}):
			return redis
		case matches(p.NamespaceSelector, labels.Set{"kubernetes.io/metadata.name": "monitoring"}) &&
			matches(p.PodSelector, labels.Set{"app.kubernetes.io/name": "prometheus"}):
			return prometheus
		case matches(p.NamespaceSelector, labels.Set{"kubernetes.io/metadata.name": "kube-system"}) &&
			matches(p.PodSelector, labels.Set{"k8s-app": "kube-dns"}):
			return dns
		}
		return other
	}
	type portProto struct {
		port  int
		proto corev1.Protocol
	}
	ports := func(where string, ps []networkingv1.NetworkPolicyPort) []portProto {
		if len(ps) == 0 {
			t.Errorf("networkpolicy: %s: a rule with no ports allows every port", where)
		}
		var out []portProto
		for _, p := range ps {
			if p.Port == nil || p.Port.Type != intstr.Int || p.EndPort != nil {
				t.Errorf("networkpolicy: %s: port %v is not one numbered port", where, p.Port)
				continue
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			out = append(out, portProto{p.Port.IntValue(), proto})
		}
		return out
	}

	seen := map[peerKind]bool{}
	for i, r := range np.Ingress {
		where := fmt.Sprintf("ingress[%d]", i)
		if len(r.From) == 0 {
			t.Errorf("networkpolicy: %s admits every source", where)
		}
		for _, p := range r.From {
			k := kind(p)
			if k != client && k != prometheus {
				t.Errorf("networkpolicy: %s admits %+v, neither the auth system's pods (%s: \"true\") nor Prometheus", where, p, clientLabel)
			}
			seen[k] = true
		}
		for _, pp := range ports(where, r.Ports) {
			if pp != (portProto{port, corev1.ProtocolTCP}) {
				t.Errorf("networkpolicy: %s admits %v, want only %d/TCP", where, pp, port)
			}
		}
	}
	for i, r := range np.Egress {
		where := fmt.Sprintf("egress[%d]", i)
		if len(r.To) == 0 {
			t.Errorf("networkpolicy: %s allows every destination", where)
		}
		var want []portProto
		for _, p := range r.To {
			switch k := kind(p); k {
			case redis:
				want = []portProto{{6379, corev1.ProtocolTCP}}
				seen[k] = true
			case dns:
				want = []portProto{{53, corev1.ProtocolUDP}, {53, corev1.ProtocolTCP}}
				seen[k] = true
			default:
				t.Errorf("networkpolicy: %s allows %+v, neither Redis nor cluster DNS", where, p)
			}
		}
		if len(r.To) > 1 {
			t.Errorf("networkpolicy: %s mixes destinations; one rule per destination keeps their ports apart", where)
		}
		for _, pp := range ports(where, r.Ports) {
			if !slices.Contains(want, pp) {
				t.Errorf("networkpolicy: %s allows %v to that destination", where, pp)
			}
		}
	}
	for k, what := range map[peerKind]string{client: "the auth system's pods", prometheus: "Prometheus", redis: "Redis", dns: "DNS"} {
		if !seen[k] {
			t.Errorf("networkpolicy: no rule for %s", what)
		}
	}
}

// TestServiceMonitor_ScrapesMetrics: the ServiceMonitor scrapes /metrics
// on the Service's named port.
func TestServiceMonitor_ScrapesMetrics(t *testing.T) {
	m := load(t)
	if len(m.sm.Spec.Endpoints) != 1 {
		t.Fatalf("servicemonitor: %d endpoints, want 1", len(m.sm.Spec.Endpoints))
	}
	ep := m.sm.Spec.Endpoints[0]
	if ep.Path != "/metrics" {
		t.Errorf("servicemonitor: path %q", ep.Path)
	}
	if !slices.ContainsFunc(m.svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port && p.Name != "" }) {
		t.Errorf("servicemonitor: port %q is not a named port of the Service", ep.Port)
	}
	if m.sm.Namespace != namespace {
		t.Errorf("servicemonitor: namespace %q, want %q", m.sm.Namespace, namespace)
	}
}

// TestConfig_ListensBeyondLoopbackWithAuth: the config parses as YAML, its
// listen is not loopback and agrees with TOLLGATE_LISTEN and the container
// port, it has an auth section (which such a listen requires), it holds no
// secret, and every key file it names comes from the Secret volume. The
// ConfigMap volume mounts it where TOLLGATE_CONFIG says.
func TestConfig_ListensBeyondLoopbackWithAuth(t *testing.T) {
	m := load(t)
	cfg := readConfig(t)
	env := m.env(t)

	listen, _ := cfg["listen"].(string)
	if listen == "" || env["TOLLGATE_LISTEN"].Value != listen {
		t.Errorf("%s: listen %q, TOLLGATE_LISTEN %q: want both set and equal", configFile, listen, env["TOLLGATE_LISTEN"].Value)
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil || p != strconv.Itoa(port) {
		t.Errorf("%s: listen %q is not on port %d", configFile, listen, port)
	}
	if ip, err := netip.ParseAddr(host); host == "localhost" || (err == nil && ip.IsLoopback()) {
		t.Errorf("%s: listen %q is loopback: no pod, probe or Service could reach it", configFile, listen)
	}
	auth, ok := cfg["auth"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no auth section, which a non-loopback listen requires", configFile)
	}
	if a, _ := auth["audience"].(string); a == "" {
		t.Errorf("%s: auth.audience is empty", configFile)
	}
	keys, _ := auth["keys"].([]any)
	if len(keys) == 0 {
		t.Fatalf("%s: auth.keys is empty", configFile)
	}
	files := m.secretFiles(t)
	for i, k := range keys {
		key, _ := k.(map[string]any)
		if p, ok := key["secret_file"].(string); ok {
			if _, ok := files[p]; !ok {
				t.Errorf("%s: auth.keys[%d].secret_file %q is not a file of the Secret volume %v", configFile, i, p, files)
			}
		}
	}
	if _, ok := cfg["secret"]; ok {
		t.Errorf("%s: holds secret; it belongs in the Secret (TOLLGATE_SECRET_FILE)", configFile)
	}
	if st, ok := cfg["store"].(map[string]any); ok {
		if r, ok := st["redis"].(map[string]any); ok {
			for _, k := range []string{"password", "sentinel_password"} {
				if _, ok := r[k]; ok {
					t.Errorf("%s: store.redis.%s holds a password; use TOLLGATE_REDIS_PASSWORD_FILE", configFile, k)
				}
			}
		}
	}

	var mount string
	for _, v := range m.deploy.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		if v.ConfigMap.Name != "tollgate-config" {
			t.Errorf("deployment: ConfigMap %q, want tollgate-config (kustomization.yaml's generator)", v.ConfigMap.Name)
		}
		for _, vm := range m.container(t).VolumeMounts {
			if vm.Name != v.Name {
				continue
			}
			for _, it := range v.ConfigMap.Items {
				if it.Key == "tollgate.yaml" {
					mount = path.Join(vm.MountPath, it.Path)
				}
			}
		}
	}
	if mount == "" || env["TOLLGATE_CONFIG"].Value != mount {
		t.Errorf("deployment: TOLLGATE_CONFIG %q, the ConfigMap's tollgate.yaml is mounted at %q", env["TOLLGATE_CONFIG"].Value, mount)
	}
}

// TestConfig_TollgateValidatesIt: tollgate's own validate-config accepts
// the config, with stand-in key files where the Secret's would be. And, so
// that this is no empty check, it refuses the same config without its auth
// section (a non-loopback listen).
func TestConfig_TollgateValidatesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tollgate")
	}
	m := load(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tollgate")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/tollgate")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tollgate: %v\n%s", err, out)
	}

	// The Secret's files, made up, in a directory standing for its mount.
	_, mountDir := m.secretVolume(t)
	dir := t.TempDir()
	for _, key := range m.secretFiles(t) {
		b := make([]byte, 48)
		rand.Read(b)
		if err := os.WriteFile(filepath.Join(dir, key), []byte(base64.StdEncoding.EncodeToString(b)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(mountDir+"/"), []byte(dir+"/"))
	file := filepath.Join(dir, "tollgate.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate-config", file).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok\n") {
		t.Fatalf("tollgate validate-config %s: %v\n%s", configFile, err, out)
	}
	t.Logf("tollgate validate-config %s:\n%s", configFile, out)

	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "auth")
	noAuth, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, noAuth, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "validate-config", file).CombinedOutput(); err == nil {
		t.Errorf("tollgate validate-config accepts the config without auth, listening on %v:\n%s", cfg["listen"], out)
	}
}

// kustomizeBuild builds the kustomization in dir with the kustomize library
// (what kubectl kustomize runs, with its default options) and decodes every
// object of its output strictly, by kind.
func kustomizeBuild(t *testing.T, dir string) map[string]any {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	objs := map[string]any{}
	for _, doc := range splitDocs(out) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch tm.Kind {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "Service":
			obj = &corev1.Service{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		default:
			t.Errorf("kustomize %s: unexpected kind %s", dir, tm.Kind)
			continue
		}
		if _, dup := objs[tm.Kind]; dup {
			t.Errorf("kustomize %s: two %s objects", dir, tm.Kind)
		}
		decodeBytes(t, "kustomize "+dir, doc, obj, tm.APIVersion, tm.Kind)
		objs[tm.Kind] = obj
	}
	return objs
}

// TestKustomize_Builds: the base builds into exactly the objects expected,
// all in the namespace, with the Deployment naming the generated (hashed)
// ConfigMap, which holds config/tollgate.yaml; with the component, the
// ServiceMonitor comes too.
func TestKustomize_Builds(t *testing.T) {
	objs := kustomizeBuild(t, ".")
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range objs {
			if !yield(k) {
				return
			}
		}
	})
	want := []string{"ConfigMap", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kustomize: kinds %v, want %v", kinds, want)
	}
	for kind, obj := range objs {
		meta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
		if kind != "Namespace" && meta.GetNamespace() != namespace {
			t.Errorf("kustomize: %s %s in namespace %q, want %q", kind, meta.GetName(), meta.GetNamespace(), namespace)
		}
	}
	cm := objs["ConfigMap"].(*corev1.ConfigMap)
	if !strings.HasPrefix(cm.Name, "tollgate-config-") {
		t.Errorf("kustomize: ConfigMap %q has no content hash", cm.Name)
	}
	cfg, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["tollgate.yaml"] != string(cfg) {
		t.Errorf("kustomize: the ConfigMap's tollgate.yaml is not %s", configFile)
	}
	d := objs["Deployment"].(*appsv1.Deployment)
	refs := 0
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			refs++
			if v.ConfigMap.Name != cm.Name {
				t.Errorf("kustomize: the Deployment mounts ConfigMap %q, the generator made %q", v.ConfigMap.Name, cm.Name)
			}
		}
		if v.Secret != nil && v.Secret.SecretName != secretName {
			t.Errorf("kustomize: the Secret's name became %q", v.Secret.SecretName)
		}
	}
	if refs != 1 {
		t.Errorf("kustomize: %d ConfigMap volumes", refs)
	}

	// An overlay with the component, as README.md shows.
	overlay := t.TempDir()
	abs, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, abs)
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n",
		filepath.ToSlash(rel), filepath.ToSlash(filepath.Join(rel, componentDir)))
	if err := os.WriteFile(filepath.Join(overlay, kustomizationFile), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	objs = kustomizeBuild(t, overlay)
	sm, ok := objs["ServiceMonitor"].(*monitoringv1.ServiceMonitor)
	if !ok {
		t.Fatal("kustomize with the component: no ServiceMonitor")
	}
	if sm.Namespace != namespace {
		t.Errorf("kustomize with the component: ServiceMonitor in namespace %q", sm.Namespace)
	}
	if len(objs) != len(want)+1 {
		t.Errorf("kustomize with the component: %d kinds, want %d", len(objs), len(want)+1)
	}
}

// TestREADME_NamesEveryFile: README.md here says what each file is.
func TestREADME_NamesEveryFile(t *testing.T) {
	data, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{kustomizationFile, namespaceFile, serviceAccount, deploymentFile, serviceFile,
		pdbFile, netpolFile, configFile, componentDir, "servicemonitor.yaml", "kubectl apply -k deploy/kubernetes"} {
		if !bytes.Contains(data, []byte(f)) {
			t.Errorf("README.md does not mention %s", f)
		}
	}
}
