// The "resource" operation: prometheus-adapter's resource metrics provider
// (pkg/resourceprovider NewProvider, GetPodMetrics, GetNodeMetrics) over a fake Prometheus that
// answers each rendered query with the case's vector for it.
package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	pmodel "github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	prom "sigs.k8s.io/prometheus-adapter/pkg/client"
	fakeprom "sigs.k8s.io/prometheus-adapter/pkg/client/fake"
	"sigs.k8s.io/prometheus-adapter/pkg/config"
	"sigs.k8s.io/prometheus-adapter/pkg/naming"
	"sigs.k8s.io/prometheus-adapter/pkg/resourceprovider"
)

type sample struct {
	Labels map[string]string `json:"labels"`
	// Value as Prometheus writes it: "1.5", "NaN", "+Inf".
	Value     string `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// answer is what one query answers: a vector, or (Error) a failure, or (Scalar) a non-vector.
type answer struct {
	Error  bool     `json:"error"`
	Scalar bool     `json:"scalar"`
	Vector []sample `json:"vector"`
}

type podRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type resourceInput struct {
	Config string   `json:"config"`
	Pods   []podRef `json:"pods"`
	Nodes  []string `json:"nodes"`
	// Answers by namespace ("" for the node queries), cpu and memory.
	CPU    map[string]answer `json:"cpu"`
	Memory map[string]answer `json:"memory"`
}

type renderedQueries struct {
	Namespace string `json:"namespace"`
	CPU       string `json:"cpu,omitempty"`
	Memory    string `json:"memory,omitempty"`
	Error     bool   `json:"error"`
}

type containerOut struct {
	Name   string `json:"name"`
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}

type podOut struct {
	Namespace     string         `json:"namespace"`
	Name          string         `json:"name"`
	Timestamp     int64          `json:"timestamp"`
	WindowSeconds float64        `json:"windowSeconds"`
	Containers    []containerOut `json:"containers"`
}

type nodeOut struct {
	Name          string  `json:"name"`
	Timestamp     int64   `json:"timestamp"`
	WindowSeconds float64 `json:"windowSeconds"`
	CPU           string  `json:"cpu"`
	Memory        string  `json:"memory"`
}

type resourceOutput struct {
	ConfigError string            `json:"configError,omitempty"`
	PodQueries  []renderedQueries `json:"podQueries"`
	NodeQueries renderedQueries   `json:"nodeQueries"`
	Pods        []podOut          `json:"pods"`
	Nodes       []nodeOut         `json:"nodes"`
}

var (
	podResource  = schema.GroupResource{Resource: "pods"}
	nodeResource = schema.GroupResource{Resource: "nodes"}
)

// render builds a read's query as the provider's runQuery does, from the same exported parts
// its newResourceQuery uses.
func render(rule config.ResourceRule, m apimeta.RESTMapper, node bool, namespace string, names []string) (prom.Selector, error) {
	conv, err := naming.NewResourceConverter(rule.Resources.Template, rule.Resources.Overrides, m)
	if err != nil {
		return "", err
	}
	if node {
		q, err := naming.NewMetricsQuery(rule.NodeQuery, conv)
		if err != nil {
			return "", err
		}
		return q.Build("", nodeResource, "", nil, labels.Everything(), names...)
	}
	q, err := naming.NewMetricsQuery(rule.ContainerQuery, conv)
	if err != nil {
		return "", err
	}
	return q.Build("", podResource, namespace, []string{rule.ContainerLabel}, labels.Everything(), names...)
}

func toResult(a answer) (prom.QueryResult, error) {
	if a.Error {
		return prom.QueryResult{}, fmt.Errorf("query failed")
	}
	if a.Scalar {
		return prom.QueryResult{Type: pmodel.ValScalar, Scalar: &pmodel.Scalar{Value: 1}}, nil
	}
	vec := pmodel.Vector{}
	for _, s := range a.Vector {
		v, err := strconv.ParseFloat(s.Value, 64)
		if err != nil {
			panic(err)
		}
		metric := pmodel.Metric{}
		for k, val := range s.Labels {
			metric[pmodel.LabelName(k)] = pmodel.LabelValue(val)
		}
		vec = append(vec, &pmodel.Sample{Metric: metric, Value: pmodel.SampleValue(v), Timestamp: pmodel.Time(s.Timestamp)})
	}
	return prom.QueryResult{Type: pmodel.ValVector, Vector: &vec}, nil
}

func runResource(line []byte, m apimeta.RESTMapper) (o resourceOutput) {
	o.PodQueries = []renderedQueries{}
	o.Pods = []podOut{}
	o.Nodes = []nodeOut{}
	var c resourceInput
	if err := json.Unmarshal(line, &c); err != nil {
		o.ConfigError = "bad case: " + err.Error()
		return
	}
	cfg, err := config.FromYAML([]byte(c.Config))
	if err != nil {
		o.ConfigError = err.Error()
		return
	}
	if cfg.ResourceRules == nil {
		o.ConfigError = "no resourceRules"
		return
	}
	fake := &fakeprom.FakePrometheusClient{
		AcceptableInterval: pmodel.Interval{End: pmodel.Latest},
		ErrQueries:         map[prom.Selector]error{},
		QueryResults:       map[prom.Selector]prom.QueryResult{},
	}
	register := func(q prom.Selector, a answer) {
		res, err := toResult(a)
		if err != nil {
			fake.ErrQueries[q] = err
		} else {
			fake.QueryResults[q] = res
		}
	}
	both := func(node bool, namespace string, names []string) renderedQueries {
		r := renderedQueries{Namespace: namespace}
		cpu, err := render(cfg.ResourceRules.CPU, m, node, namespace, names)
		if err != nil {
			r.Error = true
			return r
		}
		mem, err := render(cfg.ResourceRules.Memory, m, node, namespace, names)
		if err != nil {
			r.Error = true
			return r
		}
		r.CPU, r.Memory = string(cpu), string(mem)
		register(cpu, c.CPU[namespace])
		register(mem, c.Memory[namespace])
		return r
	}
	// the pods of each namespace, in first-seen order, as GetPodMetrics groups them
	var order []string
	byNs := map[string][]string{}
	for _, p := range c.Pods {
		if _, ok := byNs[p.Namespace]; !ok {
			order = append(order, p.Namespace)
		}
		byNs[p.Namespace] = append(byNs[p.Namespace], p.Name)
	}
	for _, ns := range order {
		o.PodQueries = append(o.PodQueries, both(false, ns, byNs[ns]))
	}
	if len(c.Nodes) > 0 {
		o.NodeQueries = both(true, "", c.Nodes)
	}

	prov, err := resourceprovider.NewProvider(fake, m, cfg.ResourceRules)
	if err != nil {
		o.ConfigError = err.Error()
		return
	}
	pods := make([]*metav1.PartialObjectMetadata, 0, len(c.Pods))
	for _, p := range c.Pods {
		pods = append(pods, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}})
	}
	pms, err := prov.GetPodMetrics(pods...)
	if err != nil {
		o.ConfigError = "GetPodMetrics: " + err.Error()
		return
	}
	for _, pm := range pms {
		out := podOut{
			Namespace:     pm.Namespace,
			Name:          pm.Name,
			Timestamp:     pm.Timestamp.UnixMilli(),
			WindowSeconds: pm.Window.Duration.Seconds(),
			Containers:    []containerOut{},
		}
		for _, cm := range pm.Containers {
			cpu, mem := cm.Usage[corev1.ResourceCPU], cm.Usage[corev1.ResourceMemory]
			out.Containers = append(out.Containers, containerOut{Name: cm.Name, CPU: cpu.String(), Memory: mem.String()})
		}
		// Go map order: sorted for the comparison
		sort.Slice(out.Containers, func(i, j int) bool { return out.Containers[i].Name < out.Containers[j].Name })
		o.Pods = append(o.Pods, out)
	}
	nodes := make([]*corev1.Node, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	nms, err := prov.GetNodeMetrics(nodes...)
	if err != nil {
		o.ConfigError = "GetNodeMetrics: " + err.Error()
		return
	}
	for _, nm := range nms {
		cpu, mem := nm.Usage[corev1.ResourceCPU], nm.Usage[corev1.ResourceMemory]
		o.Nodes = append(o.Nodes, nodeOut{
			Name:          nm.Name,
			Timestamp:     nm.Timestamp.UnixMilli(),
			WindowSeconds: nm.Window.Duration.Seconds(),
			CPU:           cpu.String(),
			Memory:        mem.String(),
		})
	}
	return
}
