// prometheus-adapter v0.12.0's config loading, naming and query rendering (pkg/config,
// pkg/naming), its resource metrics provider (pkg/resourceprovider) and its metric discovery
// (pkg/custom-provider, pkg/external-provider), for
// tests/core/prometheus_adapter/differential_test.ts: one JSON case a line on stdin, one JSON
// answer a line on stdout. A case's "op" picks the operation: "" (naming and query rendering),
// "resource" (resource.go), "discovery" (discovery.go) or "restmapper" (restmapper.go). The
// RESTMapper of the others is a fixed DefaultRESTMapper that the TypeScript side mirrors
// (TEST_KINDS in the test).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"sort"

	pmodel "github.com/prometheus/common/model"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	prom "sigs.k8s.io/prometheus-adapter/pkg/client"
	"sigs.k8s.io/prometheus-adapter/pkg/config"
	"sigs.k8s.io/prometheus-adapter/pkg/naming"
)

type groupResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
}

type input struct {
	// Config is the YAML of the config file.
	Config string `json:"config"`
	// External selects externalRules instead of rules.
	External bool `json:"external"`
	Rule     int  `json:"rule"`
	// Series is a discovered series: its name and label names.
	Series       string   `json:"series"`
	SeriesLabels []string `json:"seriesLabels"`
	// The request: the resource, its namespace, the metric selector and the object names.
	Resource  groupResource `json:"resource"`
	Namespace string        `json:"namespace"`
	Selector  string        `json:"selector"`
	Names     []string      `json:"names"`
}

type output struct {
	ConfigError string          `json:"configError,omitempty"`
	Kept        bool            `json:"kept"`
	Name        string          `json:"name"`
	NameError   string          `json:"nameError,omitempty"`
	Resources   []groupResource `json:"resources"`
	Namespaced  bool            `json:"namespaced"`
	Query       string          `json:"query"`
	QueryError  string          `json:"queryError,omitempty"`
}

func mapper() apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		group, version, kind string
		namespaced           bool
	}{
		{"", "v1", "Pod", true},
		{"", "v1", "Service", true},
		{"", "v1", "ConfigMap", true},
		{"", "v1", "Node", false},
		{"", "v1", "PersistentVolume", false},
		{"", "v1", "Namespace", false},
		{"apps", "v1", "Deployment", true},
		{"apps", "v1", "StatefulSet", true},
		{"networking.k8s.io", "v1", "Ingress", true},
		{"batch", "v1", "Job", true},
		{"cheese.io", "v1", "Brand", true},
	} {
		scope := apimeta.RESTScopeRoot
		if k.namespaced {
			scope = apimeta.RESTScopeNamespace
		}
		m.Add(schema.GroupVersionKind{Group: k.group, Version: k.version, Kind: k.kind}, scope)
	}
	return m
}

func run(c input, m apimeta.RESTMapper) (o output) {
	o.Resources = []groupResource{}
	cfg, err := config.FromYAML([]byte(c.Config))
	if err != nil {
		o.ConfigError = err.Error()
		return
	}
	rules := cfg.Rules
	if c.External {
		rules = cfg.ExternalRules
	}
	namers, err := naming.NamersFromConfig(rules, m)
	if err != nil {
		o.ConfigError = err.Error()
		return
	}
	if c.Rule < 0 || c.Rule >= len(namers) {
		o.ConfigError = "no such rule"
		return
	}
	namer := namers[c.Rule]
	lbls := pmodel.LabelSet{}
	for _, l := range c.SeriesLabels {
		lbls[pmodel.LabelName(l)] = "x"
	}
	series := prom.Series{Name: c.Series, Labels: lbls}
	o.Kept = len(namer.FilterSeries([]prom.Series{series})) == 1
	if name, err := namer.MetricNameForSeries(series); err != nil {
		o.NameError = err.Error()
	} else {
		o.Name = name
	}
	res, namespaced := namer.ResourcesForSeries(series)
	for _, r := range res {
		o.Resources = append(o.Resources, groupResource{Group: r.Group, Resource: r.Resource})
	}
	sort.Slice(o.Resources, func(i, j int) bool {
		a, b := o.Resources[i], o.Resources[j]
		return a.Group < b.Group || (a.Group == b.Group && a.Resource < b.Resource)
	})
	o.Namespaced = namespaced
	sel, err := labels.Parse(c.Selector)
	if err != nil {
		o.QueryError = "selector: " + err.Error()
		return
	}
	var q prom.Selector
	if c.External {
		q, err = namer.QueryForExternalSeries(c.Series, c.Namespace, sel)
	} else {
		q, err = namer.QueryForSeries(c.Series, schema.GroupResource{Group: c.Resource.Group, Resource: c.Resource.Resource}, c.Namespace, sel, c.Names...)
	}
	if err != nil {
		o.QueryError = err.Error()
	} else {
		o.Query = string(q)
	}
	return
}

func main() {
	m := mapper()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	// every answer is held until stdin ends: a caller that writes all its input before
	// reading (Deno's spawnSync) would otherwise stall on a full stdout pipe
	var out bytes.Buffer
	defer func() { _, _ = os.Stdout.Write(out.Bytes()) }()
	enc := json.NewEncoder(&out)
	for in.Scan() {
		var op struct {
			Op string `json:"op"`
		}
		_ = json.Unmarshal(in.Bytes(), &op)
		switch op.Op {
		case "resource":
			_ = enc.Encode(runResource(in.Bytes(), m))
		case "discovery":
			_ = enc.Encode(runDiscovery(in.Bytes(), m))
		case "restmapper":
			_ = enc.Encode(runRestMapper(in.Bytes()))
		default:
			var c input
			if err := json.Unmarshal(in.Bytes(), &c); err != nil {
				_ = enc.Encode(output{ConfigError: "bad case: " + err.Error()})
			} else {
				_ = enc.Encode(run(c, m))
			}
		}
	}
}
