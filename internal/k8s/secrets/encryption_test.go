package secrets

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestEncryptionConfig(t *testing.T) {
	type provider struct{ kind, keyName, secret string }

	tests := []struct {
		name              string
		secretbox, aescbc string
		want              []provider
		wantErr           string
	}{
		{"secretbox", testSecretbox, "", []provider{{"secretbox", "key2", testSecretbox}, {"identity", "", ""}}, ""},
		{"aescbc", "", testAESCBC, []provider{{"aescbc", "key1", testAESCBC}, {"identity", "", ""}}, ""},
		{"both, secretbox first", testSecretbox, testAESCBC, []provider{
			{"secretbox", "key2", testSecretbox}, {"aescbc", "key1", testAESCBC}, {"identity", "", ""},
		}, ""},
		{"none", "", "", nil, "no encryption secret"},
		{"secretbox not base64", "!!", "", nil, "secretbox secret: not base64"},
		{"secretbox wrong size", testAESCBC, "", nil, "secretbox secret: key is 16 bytes"},
		{"aescbc wrong size", "", "AAEC", nil, "aescbc secret: key is 3 bytes"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := EncryptionConfig(tt.secretbox, tt.aescbc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			// Decode into a generic tree, as the apiserver's loader sees
			// YAML, rather than into the struct that produced it.
			var doc map[string]any
			if err := yaml.UnmarshalStrict(data, &doc); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, data)
			}

			if doc["apiVersion"] != "apiserver.config.k8s.io/v1" || doc["kind"] != "EncryptionConfiguration" {
				t.Errorf("apiVersion/kind = %v/%v", doc["apiVersion"], doc["kind"])
			}

			resources, _ := doc["resources"].([]any)
			if len(resources) != 1 {
				t.Fatalf("resources = %v, want one entry", doc["resources"])
			}

			entry, _ := resources[0].(map[string]any)
			if got, _ := entry["resources"].([]any); !slices.Equal(got, []any{"secrets"}) {
				t.Errorf("resources[0].resources = %v, want [secrets]", entry["resources"])
			}

			var got []provider

			providers, _ := entry["providers"].([]any)
			for _, p := range providers {
				m, _ := p.(map[string]any)
				if len(m) != 1 {
					t.Fatalf("provider %v must have exactly one kind", m)
				}

				for kind, v := range m {
					pr := provider{kind: kind}

					if keys, ok := v.(map[string]any)["keys"].([]any); ok {
						if len(keys) != 1 {
							t.Fatalf("%s has %d keys, want 1", kind, len(keys))
						}

						k, _ := keys[0].(map[string]any)
						pr.keyName, _ = k["name"].(string)
						pr.secret, _ = k["secret"].(string)
					}

					got = append(got, pr)
				}
			}

			if !slices.Equal(got, tt.want) {
				t.Errorf("providers = %+v\nwant        %+v\n%s", got, tt.want, data)
			}
		})
	}
}
