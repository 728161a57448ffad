// Package test holds the specs of the Helm chart in ../ferric: it renders
// the chart with Helm's own engine for the default and an HA profile,
// decodes every manifest strictly into Kubernetes API types, lints it, and
// checks the commands, flags and configuration the chart gives Ferric's
// containers against the binaries and pkg/config, so that chart and code
// cannot drift apart.
package test
