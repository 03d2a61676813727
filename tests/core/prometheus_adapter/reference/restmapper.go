// The "restmapper" operation: client-go's discovery RESTMapper
// (restmapper.NewDiscoveryRESTMapper, what prometheus-adapter resolves its rules' resources
// with) over the case's discovery groups, then its answers to ResourceFor, KindFor of each
// resource found, and ResourceSingularizer.
package main

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"
)

type restResource struct {
	Name         string `json:"name"`
	SingularName string `json:"singularName"`
	Kind         string `json:"kind"`
	Namespaced   bool   `json:"namespaced"`
}

type restGroup struct {
	Name      string                    `json:"name"`
	Versions  []string                  `json:"versions"`
	Preferred string                    `json:"preferred"`
	Resources map[string][]restResource `json:"resources"`
}

type restInput struct {
	Groups      []restGroup     `json:"groups"`
	ResourceFor []groupResource `json:"resourceFor"`
	Singular    []string        `json:"singular"`
}

type restFound struct {
	Error    bool   `json:"error"`
	Group    string `json:"group"`
	Resource string `json:"resource"`
	// KindFor of the resource found (no version asked)
	KindError bool   `json:"kindError"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
}

type restSingular struct {
	Error bool   `json:"error"`
	Value string `json:"value"`
}

type restOutput struct {
	ConfigError string         `json:"configError,omitempty"`
	ResourceFor []restFound    `json:"resourceFor"`
	Singular    []restSingular `json:"singular"`
}

func runRestMapper(line []byte) (o restOutput) {
	var in restInput
	if err := json.Unmarshal(line, &in); err != nil {
		o.ConfigError = "bad case: " + err.Error()
		return
	}
	var groups []*restmapper.APIGroupResources
	for _, g := range in.Groups {
		group := metav1.APIGroup{Name: g.Name}
		for _, v := range g.Versions {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{
				GroupVersion: schema.GroupVersion{Group: g.Name, Version: v}.String(),
				Version:      v,
			})
		}
		group.PreferredVersion = metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: g.Name, Version: g.Preferred}.String(),
			Version:      g.Preferred,
		}
		versioned := map[string][]metav1.APIResource{}
		for v, rs := range g.Resources {
			list := []metav1.APIResource{}
			for _, r := range rs {
				list = append(list, metav1.APIResource{
					Name:         r.Name,
					SingularName: r.SingularName,
					Kind:         r.Kind,
					Namespaced:   r.Namespaced,
				})
			}
			versioned[v] = list
		}
		groups = append(groups, &restmapper.APIGroupResources{Group: group, VersionedResources: versioned})
	}
	m := restmapper.NewDiscoveryRESTMapper(groups)
	o.ResourceFor = []restFound{}
	for _, gr := range in.ResourceFor {
		gvr, err := m.ResourceFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
		if err != nil {
			o.ResourceFor = append(o.ResourceFor, restFound{Error: true})
			continue
		}
		f := restFound{Group: gvr.Group, Resource: gvr.Resource}
		gvk, err := m.KindFor(schema.GroupVersionResource{Group: gvr.Group, Resource: gvr.Resource})
		if err != nil {
			f.KindError = true
		} else {
			f.Version, f.Kind = gvk.Version, gvk.Kind
		}
		o.ResourceFor = append(o.ResourceFor, f)
	}
	o.Singular = []restSingular{}
	for _, r := range in.Singular {
		s, err := m.ResourceSingularizer(r)
		if err != nil {
			o.Singular = append(o.Singular, restSingular{Error: true})
		} else {
			o.Singular = append(o.Singular, restSingular{Value: s})
		}
	}
	return
}
