// Kubernetes' own conversion of HorizontalPodAutoscalers to autoscaling/v2, the reference of
// tests/core/kubernetes/hpa_conversion_differential_test.ts: each input line (of the file the
// first argument names, else of stdin) is one HPA as
// JSON (autoscaling/v1, or autoscaling/v2beta2 in the v2beta2 module); it is decoded as
// kube-apiserver decodes a request body (the served version's defaults, then its conversion to
// the internal type), converted to autoscaling/v2 and defaulted as the API server does when it
// reads the stored object back. Each stdout line is {"object": <the v2 HPA>} or {"error": "..."}.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/kubernetes/pkg/apis/autoscaling/install"
)

type answer struct {
	Object map[string]any `json:"object,omitempty"`
	Error  string         `json:"error,omitempty"`
}

func main() {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	decoder := codecs.UniversalDecoder() // to the internal version, with defaulting
	input := os.Stdin
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			panic(err)
		}
		defer f.Close()
		input = f
	}
	in := bufio.NewScanner(input)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		enc.Encode(convert(scheme, decoder, in.Bytes()))
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}

func convert(scheme *runtime.Scheme, decoder runtime.Decoder, line []byte) (a answer) {
	internal, _, err := decoder.Decode(line, nil, nil)
	if err != nil {
		return answer{Error: err.Error()}
	}
	var v2 autoscalingv2.HorizontalPodAutoscaler
	if err := scheme.Convert(internal, &v2, nil); err != nil {
		return answer{Error: err.Error()}
	}
	scheme.Default(&v2)
	meta := map[string]any{"name": v2.Name}
	if v2.Namespace != "" {
		meta["namespace"] = v2.Namespace
	}
	if len(v2.Annotations) > 0 {
		meta["annotations"] = v2.Annotations
	}
	obj := map[string]any{
		"apiVersion": "autoscaling/v2",
		"kind":       "HorizontalPodAutoscaler",
		"metadata":   meta,
		"spec":       v2.Spec,
	}
	if !reflect.DeepEqual(v2.Status, autoscalingv2.HorizontalPodAutoscalerStatus{}) {
		obj["status"] = v2.Status
	}
	// through JSON, so that the answer is the objects' JSON form
	raw, err := json.Marshal(obj)
	if err != nil {
		return answer{Error: err.Error()}
	}
	if err := json.Unmarshal(raw, &a.Object); err != nil {
		return answer{Error: err.Error()}
	}
	return a
}
