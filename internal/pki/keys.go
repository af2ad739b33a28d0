package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// KeyType selects the algorithm of a generated private key.
type KeyType int

// Key algorithms. Ed25519 is the zero value because it is what Talos uses for
// the OS CA and for talosctl client certificates.
const (
	Ed25519 KeyType = iota
	ECDSAP256
	RSA4096
)

// String returns the flag-style name of the key type.
func (t KeyType) String() string {
	switch t {
	case Ed25519:
		return "ed25519"
	case ECDSAP256:
		return "ecdsa-p256"
	case RSA4096:
		return "rsa-4096"
	default:
		return fmt.Sprintf("KeyType(%d)", int(t))
	}
}

// PEM block types as written by Talos (siderolabs/crypto), so that files we
// produce are readable by real talosctl and the other way round.
const (
	pemTypeCertificate = "CERTIFICATE"
	pemTypeCSR         = "CERTIFICATE REQUEST"
	pemTypeEd25519Key  = "ED25519 PRIVATE KEY"
	pemTypeECKey       = "EC PRIVATE KEY"
	pemTypeRSAKey      = "RSA PRIVATE KEY"
	pemTypePKCS8Key    = "PRIVATE KEY"
)

// GenerateKey creates a new private key of the given type.
func GenerateKey(t KeyType) (crypto.Signer, error) {
	switch t {
	case Ed25519:
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate ed25519 key: %w", err)
		}

		return key, nil
	case ECDSAP256:
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate ecdsa key: %w", err)
		}

		return key, nil
	case RSA4096:
		key, err := rsa.GenerateKey(rand.Reader, 4096)
		if err != nil {
			return nil, fmt.Errorf("generate rsa key: %w", err)
		}

		return key, nil
	default:
		return nil, fmt.Errorf("generate key: unsupported key type %v", t)
	}
}

// EncodePrivateKeyPEM encodes a private key using the PEM block type Talos
// uses for that algorithm.
func EncodePrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	var block pem.Block

	switch k := key.(type) {
	case ed25519.PrivateKey:
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("encode ed25519 key: %w", err)
		}

		block = pem.Block{Type: pemTypeEd25519Key, Bytes: der}
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("encode ecdsa key: %w", err)
		}

		block = pem.Block{Type: pemTypeECKey, Bytes: der}
	case *rsa.PrivateKey:
		block = pem.Block{Type: pemTypeRSAKey, Bytes: x509.MarshalPKCS1PrivateKey(k)}
	default:
		return nil, fmt.Errorf("encode private key: unsupported key %T", key)
	}

	return pem.EncodeToMemory(&block), nil
}

// ParsePrivateKeyPEM decodes the first PEM block of data as a private key.
// It accepts the Talos block types as well as generic PKCS#8 so that keys
// made by openssl work too.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse private key: no PEM block found")
	}

	var (
		key any
		err error
	)

	switch block.Type {
	case pemTypeEd25519Key, pemTypePKCS8Key:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case pemTypeECKey:
		key, err = x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			// Some tools put PKCS#8 inside an "EC PRIVATE KEY" block.
			if k, err8 := x509.ParsePKCS8PrivateKey(block.Bytes); err8 == nil {
				key, err = k, nil
			}
		}
	case pemTypeRSAKey:
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("parse private key: unexpected PEM block %q", block.Type)
	}

	if err != nil {
		return nil, fmt.Errorf("parse private key (%s): %w", block.Type, err)
	}

	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("parse private key: unsupported key %T", key)
	}

	return signer, nil
}

// GenerateKeyPEM creates a new private key and returns it PEM encoded.
func GenerateKeyPEM(t KeyType) ([]byte, error) {
	key, err := GenerateKey(t)
	if err != nil {
		return nil, err
	}

	return EncodePrivateKeyPEM(key)
}

// publicKeysEqual reports whether two public keys are the same key.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface {
		Equal(crypto.PublicKey) bool
	}

	ea, ok := a.(equaler)

	return ok && ea.Equal(b)
}
