package test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../ferric"
	release   = "bm"
	namespace = "baremetal"
)

// serviceMonitor is the part of the Prometheus operator's CRD the chart
// uses; decoding strictly into it catches a misspelt field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// newObject is the API type of each kind the chart may render.
var newObject = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &serviceMonitor{} },
}

// manifests is one rendering of the chart, decoded.
type manifests struct {
	objects []any
	notes   string
}

// valuesOf reads a values file of the chart's ci/ directory ("" for none)
// merged with overrides.
func valuesOf(profile string, overrides map[string]any) map[string]any {
	vals := map[string]any{}
	if profile != "" {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", profile+"-values.yaml"))
		Expect(err).NotTo(HaveOccurred())
		vals = v
	}
	return chartutil.MergeTables(overrides, vals)
}

// render renders the chart as `helm install` would, without a cluster.
func render(vals map[string]any) (manifests, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return manifests{}, err
	}
	rv, err := chartutil.ToRenderValues(chrt, vals,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return manifests{}, err
	}
	files, err := engine.Render(chrt, rv)
	if err != nil {
		return manifests{}, err
	}
	var m manifests
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			m.notes = files[name]
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			obj, err := decode(doc)
			if err != nil {
				return manifests{}, fmt.Errorf("%s: %w", name, err)
			}
			m.objects = append(m.objects, obj)
		}
	}
	return m, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decode reads one manifest strictly: an unknown or duplicated field fails.
func decode(doc string) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return nil, err
	}
	newObj, ok := newObject[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unexpected kind %s %s", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// mustRender renders a profile that must work.
func mustRender(profile string, overrides map[string]any) manifests {
	m, err := render(valuesOf(profile, overrides))
	Expect(err).NotTo(HaveOccurred())
	return m
}

// all returns the objects of type T.
func all[T any](m manifests) []*T {
	var out []*T
	for _, o := range m.objects {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

// one returns the object of type T named name.
func one[T any](m manifests, name string) *T {
	for _, o := range all[T](m) {
		if any(o).(metav1.Object).GetName() == name {
			return o
		}
	}
	Expect(name).To(BeEmpty(), "no %T named %s", new(T), name)
	return nil
}

// kinds lists "Kind/name" of every object.
func (m manifests) kinds() []string {
	var out []string
	for _, o := range m.objects {
		kind := o.(interface{ GetObjectKind() schema.ObjectKind }).GetObjectKind().GroupVersionKind().Kind
		out = append(out, kind+"/"+o.(metav1.Object).GetName())
	}
	return out
}

// writeFile writes data into dir/name and returns the path.
func writeFile(dir, name, data string) string {
	p := filepath.Join(dir, name)
	Expect(os.WriteFile(p, []byte(data), 0o600)).To(Succeed())
	return p
}
