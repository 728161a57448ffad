package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ferricbm/ferric/pkg/config"
)

// Secrets the HA profile keeps outside the chart, as an operator creates them.
var existingSecrets = map[string]map[string]string{
	"ferric-db":    {"connection": "mysql://ferric:db-secret@mysql.example.org:3306/ferric"},
	"ferric-amqp":  {"url": "amqp://ferric:amqp-secret@rabbitmq.example.org:5672/"},
	"ferric-extra": {"FERRIC_DEFAULT_DEBUG": "true"},
}

var _ = Describe("the ferric chart", func() {
	const (
		api       = release + "-ferric-api"
		conductor = release + "-ferric-conductor"
	)

	It("refuses to render without an external database and broker", func() {
		_, err := render(valuesOf("", nil))
		Expect(err).To(MatchError(ContainSubstring("database.connection or database.existingSecret is required")))
		_, err = render(valuesOf("", map[string]any{"database": map[string]any{"existingSecret": "db"}}))
		Expect(err).To(MatchError(ContainSubstring("rabbitmq.url or rabbitmq.existingSecret is required")))
	})

	It("refuses config options the chart sets itself", func() {
		_, err := render(valuesOf("default", map[string]any{"config": map[string]any{"rpc": map[string]any{"transport": "inprocess"}}}))
		Expect(err).To(MatchError(ContainSubstring("config.rpc.transport is set by the chart")))
	})

	It("renders the default profile into the expected objects", func() {
		m := mustRender("default", nil)
		Expect(m.kinds()).To(ConsistOf(
			"ConfigMap/"+release+"-ferric",
			"Secret/"+release+"-ferric-database", "Secret/"+release+"-ferric-rabbitmq",
			"ServiceAccount/"+release+"-ferric",
			"Deployment/"+api, "Service/"+api, "PodDisruptionBudget/"+api, "NetworkPolicy/"+api,
			"StatefulSet/"+conductor, "Service/"+conductor, "NetworkPolicy/"+conductor,
			"Job/"+release+"-ferric-dbsync",
		))
		Expect(*one[appsv1.Deployment](m, api).Spec.Replicas).To(BeEquivalentTo(2))
		Expect(m.notes).To(ContainSubstring("auth_strategy is noauth"))
		Expect(m.notes).NotTo(ContainSubstring("deprecated"))
	})

	It("sizes each pod's database pool so that every API replica and conductor fits in database.maxConnections", func() {
		poolOf := func(m manifests) map[string]int {
			dir := GinkgoT().TempDir()
			conf := writeFile(dir, "ferric.conf", one[corev1.ConfigMap](m, release+"-ferric").Data["ferric.conf"])
			pools := map[string]int{}
			for name, pod := range podSpecs(m) {
				if strings.HasSuffix(name, "dbsync") {
					continue
				}
				cfg, err := config.Load(conf, environ(m, name+"-0", pod.Containers[0]))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Database.MaxOverflow).To(BeZero(), name)
				pools[name] = cfg.Database.MaxPoolSize
			}
			return pools
		}
		Expect(poolOf(mustRender("default", nil))).To(Equal(map[string]int{api: 10, conductor: 10}), "the defaults fit MariaDB's 151")

		// 6 API replicas at most and 10 conductors share 151 - 20.
		m := mustRender("default", map[string]any{
			"api":       map[string]any{"autoscaling": map[string]any{"enabled": true, "maxReplicas": 6}},
			"conductor": map[string]any{"replicas": 10}})
		Expect(poolOf(m)).To(Equal(map[string]int{api: 8, conductor: 8}))

		_, err := render(valuesOf("default", map[string]any{"conductor": map[string]any{"replicas": 10},
			"database": map[string]any{"connection": "mysql://x@db/ferric", "maxConnections": 20, "reservedConnections": 10}}))
		Expect(err).To(MatchError(ContainSubstring("cannot each have a database connection")))
		_, err = render(valuesOf("default", map[string]any{"config": map[string]any{"database": map[string]any{"max_pool_size": 50}}}))
		Expect(err).To(MatchError(ContainSubstring("exceed database.maxConnections")))
	})

	It("takes the deprecated config.api.auth_strategy, saying so", func() {
		m := mustRender("default", map[string]any{"config": map[string]any{"api": map[string]any{"auth_strategy": "keystone"}}})
		Expect(m.notes).NotTo(ContainSubstring("noauth"))
		Expect(m.notes).To(ContainSubstring("config.api.auth_strategy is deprecated; set config.DEFAULT.auth_strategy"))
		cfg, err := config.Load(writeFile(GinkgoT().TempDir(), "ferric.conf", one[corev1.ConfigMap](m, release+"-ferric").Data["ferric.conf"]), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Default.AuthStrategy).To(Equal("keystone"))
	})

	It("renders the HA profile into the expected objects", func() {
		m := mustRender("ha", nil)
		Expect(m.kinds()).To(ConsistOf(
			"ConfigMap/"+release+"-ferric",
			"Secret/"+release+"-ferric-config", "Secret/"+release+"-ferric-htpasswd",
			"ServiceAccount/"+release+"-ferric",
			"Deployment/"+api, "Service/"+api, "PodDisruptionBudget/"+api, "NetworkPolicy/"+api,
			"HorizontalPodAutoscaler/"+api, "ServiceMonitor/"+api, "ServiceMonitor/"+conductor,
			"StatefulSet/"+conductor, "Service/"+conductor, "NetworkPolicy/"+conductor,
			"PodDisruptionBudget/"+conductor, "Job/"+release+"-ferric-dbsync",
		))
		// The HPA owns the replica count.
		Expect(one[appsv1.Deployment](m, api).Spec.Replicas).To(BeNil())
		hpa := one[autoscalingv2.HorizontalPodAutoscaler](m, api)
		Expect(hpa.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: api}))
		Expect(*hpa.Spec.MinReplicas).To(BeEquivalentTo(3))
		Expect(m.notes).NotTo(ContainSubstring("noauth"))
	})

	for _, profile := range []string{"default", "ha"} {
		Context("with the "+profile+" profile", func() {
			var m manifests
			BeforeEach(func() { m = mustRender(profile, nil) })

			It("passes helm lint", func() {
				linter := lint.All(chartDir, valuesOf(profile, nil), namespace, true)
				var problems []string
				for _, msg := range linter.Messages {
					if msg.Severity > support.InfoSev {
						problems = append(problems, msg.Error())
					}
				}
				Expect(problems).To(BeEmpty())
			})

			It("selects each component's pods, and only them, from its Services, budgets and policies", func() {
				podLabels := map[string]labels.Set{
					"api":       one[appsv1.Deployment](m, api).Spec.Template.Labels,
					"conductor": one[appsv1.StatefulSet](m, conductor).Spec.Template.Labels,
				}
				Expect(labels.SelectorFromSet(podLabels["api"]).Matches(podLabels["conductor"])).To(BeFalse())
				matches := func(sel *metav1.LabelSelector) string {
					s, err := metav1.LabelSelectorAsSelector(sel)
					Expect(err).NotTo(HaveOccurred())
					var hit []string
					for c, l := range podLabels {
						if s.Matches(l) {
							hit = append(hit, c)
						}
					}
					Expect(hit).To(HaveLen(1), "selector %v", sel)
					return hit[0]
				}
				for _, s := range all[corev1.Service](m) {
					Expect(matches(&metav1.LabelSelector{MatchLabels: s.Spec.Selector})).To(Equal(s.Labels["app.kubernetes.io/component"]))
				}
				for _, p := range all[policyv1.PodDisruptionBudget](m) {
					Expect(matches(p.Spec.Selector)).To(Equal(p.Labels["app.kubernetes.io/component"]))
				}
				for _, p := range all[networkingv1.NetworkPolicy](m) {
					Expect(matches(&p.Spec.PodSelector)).To(Equal(p.Labels["app.kubernetes.io/component"]))
				}
				for _, d := range all[appsv1.Deployment](m) {
					Expect(matches(d.Spec.Selector)).To(Equal("api"))
				}
				Expect(matches(one[appsv1.StatefulSet](m, conductor).Spec.Selector)).To(Equal("conductor"))
				Expect(one[appsv1.StatefulSet](m, conductor).Spec.ServiceName).To(Equal(one[corev1.Service](m, conductor).Name))
			})

			It("runs every container as non-root, read-only and unprivileged, with resources", func() {
				for name, pod := range podSpecs(m) {
					Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), name)
					Expect(pod.HostPID || pod.HostIPC).To(BeFalse(), name)
					for _, c := range pod.Containers {
						sc := c.SecurityContext
						Expect(sc).NotTo(BeNil(), name)
						Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), name)
						Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), name)
						Expect(sc.Privileged).To(HaveValue(BeFalse()), name)
						Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")), name)
						Expect(sc.Capabilities.Add).To(BeEmpty(), name)
						Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory), name)
						Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory), name)
					}
				}
			})

			It("probes the API's health endpoints and gives its pods time to stop", func() {
				d := one[appsv1.Deployment](m, api)
				c := d.Spec.Template.Spec.Containers[0]
				Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz/ready"))
				Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz/live"))
				Expect(c.ReadinessProbe.HTTPGet.Port.StrVal).To(Equal(c.Ports[0].Name))
				Expect(*d.Spec.Template.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", 60))
				Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
				Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(0))
				// The conductor drains for up to 60s, then unregisters.
				Expect(*one[appsv1.StatefulSet](m, conductor).Spec.Template.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", 60))
			})

			It("runs the schema upgrade as a pre-install and pre-upgrade hook, after its database Secret", func() {
				job := one[batchv1.Job](m, release+"-ferric-dbsync")
				Expect(job.Annotations).To(HaveKeyWithValue("helm.sh/hook", "pre-install,pre-upgrade"))
				Expect(job.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
				ref := job.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef
				for _, s := range all[corev1.Secret](m) {
					if s.Name == ref.Name {
						// A hook runs before the release's plain resources exist.
						Expect(s.Annotations).To(HaveKeyWithValue("helm.sh/hook", "pre-install,pre-upgrade"))
						Expect(s.Annotations["helm.sh/hook-weight"]).To(Equal("-10"))
						return
					}
				}
				Expect(existingSecrets).To(HaveKey(ref.Name))
			})

			It("starts binaries that exist with flags they accept", func() {
				for name, pod := range podSpecs(m) {
					for _, c := range pod.Containers {
						Expect(c.Command).NotTo(BeEmpty(), name)
						bin := filepath.Base(c.Command[0])
						Expect(c.Command[0]).To(Equal("/usr/bin/"+bin), name)
						Expect(c.Image).To(MatchRegexp(`/`+regexp.QuoteMeta(bin)+`:[^/]+$`), "%s runs %s from its own image", name, bin)
						help := helpOf(bin)
						argv := append(c.Command[1:], c.Args...)
						for _, a := range argv {
							if flag, ok := strings.CutPrefix(a, "--"); ok {
								Expect(help).To(MatchRegexp(`(?m)^\s+-`+regexp.QuoteMeta(flag)+`\b`), "%s: %s has no flag %s", name, bin, a)
							}
						}
						if words := nonFlags(c.Command[1:]); len(words) > 0 {
							Expect(help).To(ContainSubstring(bin+" "+strings.Join(words, " ")), "%s: %s has no command %v", name, bin, words)
						}
					}
				}
			})

			It("upgrades a database with the dbsync hook's command and environment", func() {
				job := one[batchv1.Job](m, release+"-ferric-dbsync")
				c := job.Spec.Template.Spec.Containers[0]
				env := environ(m, "dbsync-0", c)
				Expect(env).To(ContainElement(HavePrefix("FERRIC_DATABASE_CONNECTION=mysql://")))
				// The same command, against a database that exists here.
				dir := GinkgoT().TempDir()
				run := exec.Command(filepath.Join(binDir, filepath.Base(c.Command[0])), c.Command[1:]...)
				run.Env = append(env, "FERRIC_DATABASE_CONNECTION=sqlite://"+filepath.Join(dir, "ferric.db"))
				out, err := run.CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), string(out))
				Expect(string(out)).To(ContainSubstring("upgraded to schema version"))
			})

			It("gives the API and conductors a configuration pkg/config accepts, secrets outside the ConfigMap", func() {
				cm := one[corev1.ConfigMap](m, release+"-ferric")
				dir := GinkgoT().TempDir()
				confFile := writeFile(dir, "ferric.conf", cm.Data["ferric.conf"])
				for _, secret := range []string{"db-secret", "amqp-secret", "glance-secret", "$2y$05$"} {
					Expect(cm.Data["ferric.conf"]).NotTo(ContainSubstring(secret))
				}
				for name, pod := range podSpecs(m) {
					if strings.HasSuffix(name, "dbsync") {
						continue
					}
					c := pod.Containers[0]
					Expect(c.Args).To(Equal([]string{"--config", "/etc/ferric/ferric.conf"}))
					Expect(c.VolumeMounts).To(ContainElement(And(
						HaveField("MountPath", "/etc/ferric/ferric.conf"), HaveField("SubPath", "ferric.conf"))))
					podName := name + "-0"
					env := environ(m, podName, c)
					cfg, err := config.Load(confFile, env)
					Expect(err).NotTo(HaveOccurred(), name)
					if cfg.Default.AuthStrategy == "http_basic" {
						Expect(mountedFile(pod, c, cfg.API.HTTPBasicAuthUserFile)).To(BeTrue(), "the htpasswd file is mounted")
						// Validate reads the file: give it the Secret's, here.
						cfg.API.HTTPBasicAuthUserFile = writeFile(dir, "htpasswd",
							one[corev1.Secret](m, release+"-ferric-htpasswd").StringData["htpasswd"])
					}
					Expect(cfg.Validate()).To(Succeed(), name)
					Expect(cfg.RPC.Transport).To(Equal("amqp"))
					Expect(cfg.Default.Debug).To(Equal(profile == "ha"), "existingSecretConfig reaches the environment")
					Expect(cfg.RPC.AMQPURL).To(Equal("amqp://ferric:amqp-secret@rabbitmq.example.org:5672/"))
					Expect(cfg.Database.Connection).To(Equal("mysql://ferric:db-secret@mysql.example.org:3306/ferric"))
					if name == api {
						Expect(cfg.API.HostIP).To(Equal("0.0.0.0"))
						Expect(int32(cfg.API.Port)).To(Equal(c.Ports[0].ContainerPort))
						continue
					}
					// The pod name is the conductor's name on the hash ring.
					Expect(cfg.Default.Host).To(Equal(podName))
					Expect(cfg.Conductor.MetricsListen).To(Equal(":9608"))
					Expect(c.Ports).To(ContainElement(And(HaveField("Name", "metrics"), HaveField("ContainerPort", int32(9608)))))
					for _, dir := range []string{cfg.PXE.TFTPRoot, cfg.Deploy.HTTPRoot, cfg.PXE.ImagesPath, os.TempDir()} {
						Expect(writable(c, dir)).To(BeTrue(), "%s: %s is on a writable volume", name, dir)
					}
					if cfg.Deploy.HTTPURL != "" {
						Expect(cfg.Deploy.HTTPURL).To(Equal("http://10.1.2.3:8080"))
						Expect(c.Ports).To(ContainElement(HaveField("ContainerPort", int32(8080))))
					}
				}
			})
		})
	}

	It("scrapes each conductor's metrics port, reachable only from the peers named", func() {
		m := mustRender("ha", map[string]any{"networkPolicy": map[string]any{
			"metricsFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"name": "monitoring"}}}}}})
		sm := one[serviceMonitor](m, conductor)
		Expect(sm.Spec.Endpoints).To(HaveLen(1))
		Expect(sm.Spec.Endpoints[0].Port).To(Equal("metrics"))
		Expect(sm.Spec.Endpoints[0].Path).To(Equal("/metrics"))
		svc := one[corev1.Service](m, conductor)
		Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", "metrics")))
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(svc.Labels))).To(BeTrue(), "the ServiceMonitor selects the conductors' Service")

		np := one[networkingv1.NetworkPolicy](m, conductor)
		Expect(np.Spec.Ingress).To(HaveLen(2))
		Expect(np.Spec.Ingress[1].Ports[0].Port.IntValue()).To(Equal(9608))
		Expect(np.Spec.Ingress[1].From).To(ConsistOf(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "monitoring"}}}))
	})

	It("lets only the provisioning network reach the conductors' boot file server", func() {
		np := one[networkingv1.NetworkPolicy](mustRender("ha", nil), conductor)
		Expect(np.Spec.Ingress).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].From).To(ConsistOf(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.20.0.0/16"}}))
		Expect(np.Spec.Ingress[0].Ports[0].Port.IntValue()).To(Equal(8080))
		np = one[networkingv1.NetworkPolicy](mustRender("default", nil), conductor)
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
		Expect(np.Spec.Ingress).To(BeEmpty())
	})

	It("mounts TLS Secrets as directories and sets the TLS options pkg/config knows", func() {
		m := mustRender("ha", map[string]any{"tls": map[string]any{
			"apiSecret": "api-tls", "bootServerSecret": "boot-tls",
			"rabbitmqSecret": "rabbitmq-tls", "rabbitmqClientCertificate": true, "databaseSecret": "db-tls",
		}})
		confFile := writeFile(GinkgoT().TempDir(), "ferric.conf", one[corev1.ConfigMap](m, release+"-ferric").Data["ferric.conf"])
		pods := podSpecs(m)
		load := func(name string) (config.Config, corev1.PodSpec, corev1.Container) {
			pod := pods[name]
			c := pod.Containers[0]
			cfg, err := config.Load(confFile, environ(m, name+"-0", c))
			Expect(err).NotTo(HaveOccurred(), name)
			// A subPath mount would never see a renewed certificate.
			for _, vm := range c.VolumeMounts {
				if strings.HasPrefix(vm.MountPath, "/etc/ferric/tls/") {
					Expect(vm.SubPath).To(BeEmpty(), vm.Name)
				}
			}
			return cfg, pod, c
		}

		cfg, pod, c := load(api)
		Expect(cfg.API.EnableSSLAPI).To(BeTrue())
		for _, f := range []string{cfg.SSL.CertFile, cfg.SSL.KeyFile} {
			Expect(mountedFile(pod, c, f)).To(BeTrue(), f)
		}
		Expect(c.ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		Expect(c.LivenessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))

		cfg, pod, c = load(conductor)
		Expect(cfg.Deploy.HTTPURL).To(Equal("https://10.1.2.3:8080"))
		Expect(cfg.API.EnableSSLAPI).To(BeFalse(), "the conductor does not serve the API")
		for _, f := range []string{cfg.Deploy.HTTPCertFile, cfg.Deploy.HTTPKeyFile} {
			Expect(mountedFile(pod, c, f)).To(BeTrue(), f)
		}

		for _, name := range []string{api, conductor} {
			cfg, pod, c = load(name)
			Expect(cfg.AMQPTLS()).To(BeTrue(), name)
			om := cfg.OsloMessagingRabbit
			for _, f := range []string{om.SSLCAFile, om.SSLCertFile, om.SSLKeyFile} {
				Expect(mountedFile(pod, c, f)).To(BeTrue(), "%s: %s", name, f)
			}
		}
		for _, name := range []string{api, conductor, release + "-ferric-dbsync"} {
			Expect(mountedFile(pods[name], pods[name].Containers[0], "/etc/ferric/tls/database/ca.crt")).To(BeTrue(), name)
		}

		_, err := render(valuesOf("default", map[string]any{"config": map[string]any{"ssl": map[string]any{"cert_file": "/x"}}}))
		Expect(err).To(MatchError(ContainSubstring("config.ssl.cert_file is set by the chart")))
	})

	It("passes secret options as FERRIC_ variables pkg/config knows", func() {
		m := mustRender("ha", nil)
		s := one[corev1.Secret](m, release+"-ferric-config")
		Expect(s.StringData).To(Equal(map[string]string{"FERRIC_GLANCE_PASSWORD": "glance-secret"}))
		m = mustRender("default", map[string]any{"secretConfig": map[string]any{"glance": map[string]any{"pasword": "x"}}})
		c := one[appsv1.Deployment](m, api).Spec.Template.Spec.Containers[0]
		_, err := config.Load("", environ(m, "api-0", c))
		Expect(err).To(MatchError(ContainSubstring(`unknown option "pasword" in section [glance]`)))
	})
})

// podSpecs are the pod templates of the chart's workloads by workload name.
func podSpecs(m manifests) map[string]corev1.PodSpec {
	out := map[string]corev1.PodSpec{}
	for _, d := range all[appsv1.Deployment](m) {
		out[d.Name] = d.Spec.Template.Spec
	}
	for _, s := range all[appsv1.StatefulSet](m) {
		out[s.Name] = s.Spec.Template.Spec
	}
	for _, j := range all[batchv1.Job](m) {
		out[j.Name] = j.Spec.Template.Spec
	}
	Expect(out).To(HaveLen(3))
	return out
}

// environ is the environment Kubernetes gives container c of pod podName
// (IP 10.1.2.3): literal values with $(VAR) references expanded, the
// downward API, and keys of the rendered or pre-existing Secrets.
func environ(m manifests, podName string, c corev1.Container) []string {
	secret := func(name string) map[string]string {
		for _, s := range all[corev1.Secret](m) {
			if s.Name == name {
				return s.StringData
			}
		}
		Expect(existingSecrets).To(HaveKey(name))
		return existingSecrets[name]
	}
	var env []string
	vars := map[string]string{}
	for _, ef := range c.EnvFrom {
		for k, v := range secret(ef.SecretRef.Name) {
			env, vars[k] = append(env, k+"="+v), v
		}
	}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(v, func(ref string) string {
				return vars[ref[2:len(ref)-1]]
			})
		case e.ValueFrom.FieldRef != nil:
			v = map[string]string{"metadata.name": podName, "status.podIP": "10.1.2.3"}[e.ValueFrom.FieldRef.FieldPath]
			Expect(v).NotTo(BeEmpty(), e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			var ok bool
			v, ok = secret(ref.Name)[ref.Key]
			Expect(ok).To(BeTrue(), "secret %s has key %s", ref.Name, ref.Key)
		}
		env, vars[e.Name] = append(env, e.Name+"="+v), v
	}
	return env
}

func nonFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		out = append(out, a)
	}
	return out
}

// helpOf is what a built binary prints for --help (flag prints to stderr).
func helpOf(bin string) string {
	out, err := exec.Command(filepath.Join(binDir, bin), "--help").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s --help: %s", bin, out)
	return string(out)
}

// writable reports whether dir lies on a volume mounted read-write into c.
func writable(c corev1.Container, dir string) bool {
	for _, vm := range c.VolumeMounts {
		if !vm.ReadOnly && vm.SubPath == "" && (dir == vm.MountPath || strings.HasPrefix(dir, vm.MountPath+"/")) {
			return true
		}
	}
	return false
}

// mountedFile reports whether path is a file of a Secret volume mounted into c.
func mountedFile(pod corev1.PodSpec, c corev1.Container, path string) bool {
	for _, vm := range c.VolumeMounts {
		if filepath.Dir(path) != vm.MountPath {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				return true
			}
		}
	}
	return false
}
