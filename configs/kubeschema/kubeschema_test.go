package kubeschema

import (
	"reflect"
	"testing"
)

func schema() *Type {
	return &Type{Kind: "struct", Fields: map[string]*Type{
		"maxPods":         {Kind: "int", Bits: 32},
		"podPidsLimit":    {Kind: "int", Bits: 64},
		"serializeImages": {Kind: "bool"},
		"evictionHard":    {Kind: "map", Elem: &Type{Kind: "string"}},
		"syncFrequency":   {Kind: "duration"},
		"systemReserved":  {Kind: "map", Elem: &Type{Kind: "string"}},
		"memoryReservation": {Kind: "list", Elem: &Type{Kind: "struct", Fields: map[string]*Type{
			"numaNode": {Kind: "int", Bits: 32},
			"limits":   {Kind: "map", Elem: &Type{Kind: "quantity"}},
		}}},
		"cpuCFSQuotaPeriod": {Kind: "duration"},
		"registryPullQPS":   {Kind: "int", Bits: 32},
		"eventBurst":        {Kind: "intOrString"},
		"logging":           {Kind: "any"},
		"kubeAPIQPS":        {Kind: "float", Bits: 32},
	}}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want []Problem
	}{
		{name: "valid", in: map[string]any{
			"maxPods": 250, "serializeImages": false, "evictionHard": map[string]any{"memory.available": "100Mi"},
			"syncFrequency": "1m", "memoryReservation": []any{map[string]any{"numaNode": 0, "limits": map[string]any{"memory": "1Gi", "cpu": 2}}},
			"eventBurst": "10", "logging": map[string]any{"format": "json"}, "kubeAPIQPS": 5.5, "podPidsLimit": nil,
		}},
		{name: "a number in quotes for an integer", in: map[string]any{"maxPods": "250"},
			want: []Problem{{Path: "maxPods", Msg: `want an integer, got "250"`}}},
		{name: "out of range, fractions", in: map[string]any{"maxPods": 1 << 40, "registryPullQPS": 1.5},
			want: []Problem{{Path: "maxPods", Msg: "1099511627776 is out of range (-2147483648 to 2147483647)"}, {Path: "registryPullQPS", Msg: "want an integer, got 1.5"}}},
		{name: "bad duration and bool", in: map[string]any{"syncFrequency": "1 minute", "cpuCFSQuotaPeriod": 100, "serializeImages": "yes"},
			want: []Problem{
				{Path: "cpuCFSQuotaPeriod", Msg: `want a duration such as "30s", got 100`},
				{Path: "serializeImages", Msg: `want true or false, got "yes"`},
				{Path: "syncFrequency", Msg: `want a duration such as "30s", got "1 minute"`},
			}},
		{name: "shapes and nested paths", in: map[string]any{"evictionHard": []any{"memory.available<100Mi"}, "memoryReservation": []any{map[string]any{"limits": map[string]any{"memory": "lots"}, "numa": 1}}},
			want: []Problem{
				{Path: "evictionHard", Msg: "want a mapping, got a list"},
				{Path: `memoryReservation[0].limits["memory"]`, Msg: `want a quantity such as 100Mi or 500m, got "lots"`},
				{Path: "memoryReservation[0].numa", Msg: `unknown field "numa"`, Unknown: true, Suggest: ""},
			}},
		{name: "unknown field with a suggestion", in: map[string]any{"maxpods": 10, "evictionhard": nil},
			want: []Problem{
				{Path: "evictionhard", Msg: `unknown field "evictionhard"`, Unknown: true, Suggest: "evictionHard"},
				{Path: "maxpods", Msg: `unknown field "maxpods"`, Unknown: true, Suggest: "maxPods"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schema().Check(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestQuantity(t *testing.T) {
	for v, ok := range map[any]bool{"100Mi": true, "0.5": true, "500m": true, "1e3": true, 2: true, 1.5: true, "": false, "lots": false, "1Gb": false, "Mi": false, true: false} {
		if got := isQuantity(v); got != ok {
			t.Errorf("isQuantity(%v) = %t, want %t", v, got, ok)
		}
	}
}

// TestData: every embedded schema decodes, and For finds a version's own
// or its minor's newest.
func TestData(t *testing.T) {
	for v, f := range load() {
		for kind, ty := range f.Kinds {
			if ty == nil || ty.Kind != "struct" || len(ty.Fields) < 3 {
				t.Errorf("%s %s: not a struct with fields", v, kind)
			}
		}

		if got, from := For(KubeletConfiguration, "v"+v); got == nil || from != v {
			t.Errorf("For(%s) = %v from %q", v, got, from)
		}
	}

	// A patch release without a file of its own reads its minor's newest.
	if got, from := For(KubeSchedulerConfiguration, "v1.34.1"); got == nil || from != "1.34.12" {
		t.Errorf("For(1.34.1) = %v from %q, want 1.34.12's", got, from)
	}

	if gates, from := Gates("1.34.0"); len(gates) < 100 || from != "1.34.12" {
		t.Errorf("Gates(1.34.0) = %d gates from %q", len(gates), from)
	}

	if got, from := For(KubeletConfiguration, "1.2.3"); got != nil || from != "" {
		t.Errorf("For(1.2.3) = %v from %q, want none", got, from)
	}
}
