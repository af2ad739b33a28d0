package configs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"time"

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

		return
	}

	// A CA the node signs with (it has the key) must be valid now: what it
	// issues would not verify. One it only trusts may have expired
	// during a rotation: Talos says nothing, a warning says it.
	v.certificate(path+".crt", ck.Crt, len(ck.Key) > 0)
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

		v.certificate(path+".crt", ck.Crt, false)
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
		if why := keyWeakness(signer.Public()); why != "" {
			v.errorf(path, "the service account key is %s", why)
		}
	default:
		v.errorf(path, "the service account key must be RSA or ECDSA (kube-apiserver cannot sign tokens with a %T)", signer)
	}
}

// minRSABits is the smallest RSA key accepted: Kubernetes' and Talos's
// generators make 2048 or more, and NIST has deprecated anything less
// (Go's TLS itself stops at 1024).
const minRSABits = 2048

// keyWeakness says why Go's TLS or Kubernetes would not take a public key
// ("" when they would): an RSA key shorter than minRSABits, or an ECDSA
// curve other than P-256, P-384 and P-521 (crypto/tls has no P-224, nor
// has the JWT signing of service account tokens).
func keyWeakness(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < minRSABits {
			return fmt.Sprintf("an RSA key of %d bits: at least %d are required", bits, minRSABits)
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
		default:
			return fmt.Sprintf("an ECDSA key on curve %s: Go's TLS and Kubernetes take P-256, P-384 and P-521 only", k.Curve.Params().Name)
		}
	}

	return ""
}

// clockFloor is a date before any certificate talosbox was made to read:
// a machine whose clock says earlier has not set it yet (no RTC, no NTP),
// and validity dates are not judged against it.
var clockFloor = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// clockSkew is how far in the future a certificate may start: the machine
// that made it may run a little ahead.
const clockSkew = time.Hour

// certificate checks what Go's TLS checks of a certificate that parsed:
// its key, and its validity dates against the clock. A date problem is an
// error when the node signs with it (signs), else a warning.
func (v *validator) certificate(path string, crtPEM []byte, signs bool) {
	crt, err := pki.ParseCertificatePEM(crtPEM)
	if err != nil {
		return // reported by the caller
	}

	if why := keyWeakness(crt.PublicKey); why != "" {
		v.errorf(path, "the certificate's key is %s", why)
	}

	now := time.Now()
	if now.Before(clockFloor) {
		return
	}

	var why string

	switch {
	case now.After(crt.NotAfter):
		why = fmt.Sprintf("the certificate expired on %s", crt.NotAfter.UTC().Format(time.RFC3339))
	case crt.NotBefore.After(now.Add(clockSkew)):
		why = fmt.Sprintf("the certificate is not valid until %s", crt.NotBefore.UTC().Format(time.RFC3339))
	default:
		return
	}

	if signs {
		v.errorf(path, "%s: nothing the node issues with it would be trusted; replace the CA (talosctl rotate-ca)", why)
	} else {
		v.warnf(path, "%s: TLS does not accept it now", why)
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
