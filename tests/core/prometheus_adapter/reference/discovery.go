// The "discovery" operation: prometheus-adapter's metric discovery, custom
// (pkg/custom-provider NewPrometheusProvider: its caching lister and basicSeriesRegistry) or
// external (pkg/external-provider basic and periodic listers, externalSeriesRegistry), over a
// fake Prometheus whose /api/v1/series answers are the case's, then the registry's metric list
// and the queries it builds for the case's reads.
package main

import (
	"encoding/json"
	"time"

	pmodel "github.com/prometheus/common/model"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	prom "sigs.k8s.io/prometheus-adapter/pkg/client"
	fakeprom "sigs.k8s.io/prometheus-adapter/pkg/client/fake"
	"sigs.k8s.io/prometheus-adapter/pkg/config"
	cprov "sigs.k8s.io/prometheus-adapter/pkg/custom-provider"
	eprov "sigs.k8s.io/prometheus-adapter/pkg/external-provider"
	"sigs.k8s.io/prometheus-adapter/pkg/naming"
)

type discoveryRead struct {
	Group      string   `json:"group"`
	Resource   string   `json:"resource"`
	Metric     string   `json:"metric"`
	Namespaced bool     `json:"namespaced"`
	Namespace  string   `json:"namespace"`
	Selector   string   `json:"selector"`
	Names      []string `json:"names"`
}

type discoveryInput struct {
	Config   string `json:"config"`
	External bool   `json:"external"`
	// Series are /api/v1/series answers by seriesQuery: label maps with __name__.
	Series map[string][]json.RawMessage `json:"series"`
	Reads  []discoveryRead              `json:"reads"`
}

type metricOut struct {
	Group      string `json:"group"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
	Metric     string `json:"metric"`
}

type readOut struct {
	Found bool   `json:"found"`
	Query string `json:"query"`
	Error bool   `json:"error"`
}

type discoveryOutput struct {
	ConfigError string      `json:"configError,omitempty"`
	Metrics     []metricOut `json:"metrics"`
	Reads       []readOut   `json:"reads"`
}

func runDiscovery(line []byte, m apimeta.RESTMapper) (o discoveryOutput) {
	o.Metrics = []metricOut{}
	o.Reads = []readOut{}
	var c discoveryInput
	if err := json.Unmarshal(line, &c); err != nil {
		o.ConfigError = "bad case: " + err.Error()
		return
	}
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
	fake := &fakeprom.FakePrometheusClient{
		AcceptableInterval: pmodel.Interval{End: pmodel.Latest},
		SeriesResults:      map[prom.Selector][]prom.Series{},
	}
	for q, list := range c.Series {
		series := []prom.Series{}
		for _, raw := range list {
			var s prom.Series
			if err := json.Unmarshal(raw, &s); err != nil {
				o.ConfigError = "bad series: " + err.Error()
				return
			}
			series = append(series, s)
		}
		fake.SeriesResults[prom.Selector(q)] = series
	}
	if c.External {
		lister, _ := eprov.NewPeriodicMetricLister(eprov.NewBasicMetricLister(fake, namers, time.Hour), time.Hour)
		registry := eprov.NewExternalSeriesRegistry(lister)
		lister.UpdateNow()
		for _, info := range registry.ListAllMetrics() {
			o.Metrics = append(o.Metrics, metricOut{Metric: info.Metric})
		}
		for _, r := range c.Reads {
			sel, err := labels.Parse(r.Selector)
			if err != nil {
				panic(err)
			}
			q, found, err := registry.QueryForMetric(r.Namespace, r.Metric, sel)
			o.Reads = append(o.Reads, readOut{Found: found, Query: string(q), Error: err != nil})
		}
	} else {
		prov, runner := cprov.NewPrometheusProvider(m, nil, fake, namers, time.Hour, time.Hour)
		stop := make(chan struct{})
		runner.RunUntil(stop)
		// the first update runs at once in the background; SetSeries makes the list non-nil
		deadline := time.Now().Add(10 * time.Second)
		for prov.ListAllMetrics() == nil {
			if time.Now().After(deadline) {
				close(stop)
				o.ConfigError = "discovery did not finish"
				return
			}
			time.Sleep(20 * time.Microsecond)
		}
		close(stop)
		for _, info := range prov.ListAllMetrics() {
			o.Metrics = append(o.Metrics, metricOut{
				Group:      info.GroupResource.Group,
				Resource:   info.GroupResource.Resource,
				Namespaced: info.Namespaced,
				Metric:     info.Metric,
			})
		}
		registry := prov.(cprov.SeriesRegistry)
		for _, r := range c.Reads {
			sel, err := labels.Parse(r.Selector)
			if err != nil {
				panic(err)
			}
			info := provider.CustomMetricInfo{
				GroupResource: schema.GroupResource{Group: r.Group, Resource: r.Resource},
				Namespaced:    r.Namespaced,
				Metric:        r.Metric,
			}
			q, found := registry.QueryForMetric(info, r.Namespace, sel, r.Names...)
			o.Reads = append(o.Reads, readOut{Found: found, Query: string(q)})
		}
	}
	return
}
