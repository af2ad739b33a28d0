package configs

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"strings"

	"github.com/talosbox/talosbox/internal/pki"
)

// caPair checks a certificate authority of the config: whatever parts are
// present must parse, the certificate must be a CA, and the key must be
// its key (which parts are required depends on the node type and is
// checked by the caller). Every CA goes through pki.CheckCA, the rule the
// node signs with.
func (v *validator) caPair(path string, ck *PEMCertificateAndKey) {
	if ck == nil {
		return
	}

	if len(ck.Key) > 0 {
		if _, err := pki.ParsePrivateKeyPEM(ck.Key); err != nil {
			v.errorf(path+".key", "invalid private key: %v", keyProblem(err))

			return
		}
	}

	if len(ck.Crt) == 0 {
		return
	}

	err := pki.CheckCA(&pki.CertAndKey{Crt: ck.Crt, Key: ck.Key})

	switch {
	case err == nil:
	case errors.Is(err, pki.ErrKeyMismatch):
		v.errorf(path+".key", "the private key does not belong to the certificate in .%s.crt: the pair cannot sign anything (was one of them replaced without the other?)", path)
	default:
		v.errorf(path+".crt", "invalid certificate: %v", certProblem(err))
	}
}

// acceptedCA checks a CA trusted besides the issuing one (during a
// rotation): a certificate only, and a CA.
func (v *validator) acceptedCA(path string, crt Base64) {
	if len(crt) == 0 {
		v.errorf(path+".crt", "certificate is required")

		return
	}

	v.caPair(path, &PEMCertificateAndKey{Crt: crt})
}

// leafPair checks a client identity (a certificate and its key, not a CA).
func (v *validator) leafPair(path string, ck *PEMCertificateAndKey) {
	v.pemCertificate(path+".crt", ck.Crt, true)

	if len(ck.Key) == 0 {
		v.errorf(path+".key", "client identity key is required")

		return
	}

	if _, err := pki.ParsePrivateKeyPEM(ck.Key); err != nil {
		v.errorf(path+".key", "invalid private key: %v", keyProblem(err))

		return
	}

	if len(ck.Crt) > 0 {
		err := (&pki.CertAndKey{Crt: ck.Crt, Key: ck.Key}).Validate()
		if errors.Is(err, pki.ErrKeyMismatch) {
			v.errorf(path+".key", "the private key does not belong to the certificate in .%s.crt", path)
		}
	}
}

// serviceAccountKey checks the key kube-apiserver signs service account
// tokens with: it reads RSA and ECDSA keys only.
func (v *validator) serviceAccountKey(path string, key Base64) {
	if len(key) == 0 {
		return
	}

	signer, err := pki.ParsePrivateKeyPEM(key)
	if err != nil {
		v.errorf(path, "invalid private key: %v", keyProblem(err))

		return
	}

	switch signer.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey:
	default:
		v.errorf(path, "the service account key must be RSA or ECDSA (kube-apiserver cannot sign tokens with a %T)", signer)
	}
}

func (v *validator) pemCertificate(path string, crt Base64, required bool) {
	switch {
	case len(crt) > 0:
		if _, err := pki.ParseCertificatePEM(crt); err != nil {
			v.errorf(path, "invalid certificate: %v", certProblem(err))
		}
	case required:
		v.errorf(path, "certificate is required")
	}
}

// certProblem and keyProblem word pki's parse errors for a config: the
// usual mistake is a value that is not base64 of PEM at all.
func certProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "parse certificate: ")
	if msg == "no PEM block found" {
		return "expected a PEM CERTIFICATE block (base64 of -----BEGIN CERTIFICATE-----...)"
	}

	return msg
}

func keyProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "parse private key: ")
	if msg == "no PEM block found" {
		return "expected a PEM PRIVATE KEY block (base64 of -----BEGIN ... PRIVATE KEY-----...)"
	}

	return msg
}
