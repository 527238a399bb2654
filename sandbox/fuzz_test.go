package sandbox

import (
	"reflect"
	"testing"
)

// FuzzDecodeSpec feeds the launcher's --spec argument arbitrary text: it must never panic,
// and whatever it accepts must pass Check and survive a round trip unchanged.
func FuzzDecodeSpec(f *testing.F) {
	f.Add(`{"landlock":true,"rules":[{"path":"/usr","access":5,"optional":true}],"dataMB":512,"pidsCgroup":"/sys/fs/cgroup/pids/j","pidsMax":256}`)
	f.Add(`{}`)
	f.Add(`{"rules":[{"path":"/a/../b","access":1}]}`)
	f.Add(`{"rules":[{"path":"/a","access":255}]}`)
	f.Add(`{"dataMB":-1}`)
	f.Add(`{"rules":null} {}`)
	f.Fuzz(func(t *testing.T, text string) {
		spec, err := DecodeSpec(text)
		if err != nil {
			return
		}
		if err := spec.Check(); err != nil {
			t.Fatalf("accepted a spec that fails Check: %v", err)
		}
		enc, err := spec.Encode()
		if err != nil {
			t.Fatalf("cannot encode an accepted spec: %v", err)
		}
		again, err := DecodeSpec(enc)
		if err != nil || !reflect.DeepEqual(normal(spec), normal(again)) {
			t.Fatalf("round trip: %+v -> %s -> %+v (%v)", spec, enc, again, err)
		}
	})
}

func normal(s Spec) Spec {
	if len(s.Rules) == 0 {
		s.Rules = nil
	}
	return s
}
