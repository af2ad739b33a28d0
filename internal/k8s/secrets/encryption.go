package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// Key names Talos gives the two ciphers; kept identical so data a Talos
// apiserver encrypted stays readable here and the other way round.
const (
	secretboxKeyName = "key2"
	aescbcKeyName    = "key1"
)

type (
	encryptionConfiguration struct {
		APIVersion string               `json:"apiVersion"`
		Kind       string               `json:"kind"`
		Resources  []encryptionResource `json:"resources"`
	}
	encryptionResource struct {
		Resources []string             `json:"resources"`
		Providers []encryptionProvider `json:"providers"`
	}
	encryptionProvider struct {
		Secretbox *encryptionKeys `json:"secretbox,omitempty"`
		AESCBC    *encryptionKeys `json:"aescbc,omitempty"`
		Identity  *struct{}       `json:"identity,omitempty"`
	}
	encryptionKeys struct {
		Keys []encryptionKey `json:"keys"`
	}
	encryptionKey struct {
		Name   string `json:"name"`
		Secret string `json:"secret"`
	}
)

// EncryptionConfig renders the apiserver EncryptionConfiguration for
// Secrets. The first provider encrypts new writes, so secretbox leads when
// set; aescbc stays after it to read data written before a switch, and
// identity last to read data stored before encryption was enabled.
func EncryptionConfig(secretbox, aescbc string) ([]byte, error) {
	if secretbox == "" && aescbc == "" {
		return nil, errors.New("encryption config: no encryption secret (cluster.secretboxEncryptionSecret or cluster.aescbcEncryptionSecret)")
	}

	var providers []encryptionProvider

	if secretbox != "" {
		if err := checkKey(secretbox, 32); err != nil {
			return nil, fmt.Errorf("encryption config: secretbox secret: %w", err)
		}

		providers = append(providers, encryptionProvider{Secretbox: &encryptionKeys{
			Keys: []encryptionKey{{Name: secretboxKeyName, Secret: secretbox}},
		}})
	}

	if aescbc != "" {
		if err := checkKey(aescbc, 16, 24, 32); err != nil {
			return nil, fmt.Errorf("encryption config: aescbc secret: %w", err)
		}

		providers = append(providers, encryptionProvider{AESCBC: &encryptionKeys{
			Keys: []encryptionKey{{Name: aescbcKeyName, Secret: aescbc}},
		}})
	}

	providers = append(providers, encryptionProvider{Identity: &struct{}{}})

	data, err := yaml.Marshal(encryptionConfiguration{
		APIVersion: "apiserver.config.k8s.io/v1",
		Kind:       "EncryptionConfiguration",
		Resources:  []encryptionResource{{Resources: []string{"secrets"}, Providers: providers}},
	})
	if err != nil {
		return nil, fmt.Errorf("encryption config: %w", err)
	}

	return data, nil
}

// checkKey catches a bad secret here; the apiserver would only say so by
// crash-looping.
func checkKey(s string, sizes ...int) error {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("not base64: %w", err)
	}

	if !slices.Contains(sizes, len(raw)) {
		return fmt.Errorf("key is %d bytes, want one of %v", len(raw), sizes)
	}

	return nil
}
