package trustd

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/pki"
)

// minRSABits refuses RSA keys too weak to protect an apid.
const minRSABits = 2048

// service is the SecurityService; the caller is already authenticated
// by Server.unary when Certificate runs.
type service struct {
	security.UnimplementedSecurityServiceServer

	s *Server
	// stopping is closed when the server stops (nil: never).
	stopping <-chan struct{}
}

// Certificate signs the caller's CSR as a server certificate. Whatever the
// CSR asks for, the certificate has server authentication as its only
// extended key usage and no subject organization: apid reads roles from
// the organization of client certificates, and a worker must never be
// able to mint one (os:admin or any other).
func (svc *service) Certificate(ctx context.Context, req *security.CertificateRequest) (*security.CertificateResponse, error) {
	crtPEM, err := svc.s.sign(req.GetCsr())
	if err != nil {
		return nil, err
	}

	crt, err := pki.ParseCertificatePEM(crtPEM)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "trustd: the issued certificate does not parse: %v", err)
	}

	from := "unknown peer"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}

	// %q: the names come from the peer and must not forge log lines.
	s := svc.s
	s.log.Printf("issued certificate %x to %s: CN=%q IPs=%v DNS=%q, valid until %s",
		crt.SerialNumber, from, crt.Subject.CommonName, crt.IPAddresses, crt.DNSNames, crt.NotAfter.Format("2006-01-02T15:04:05Z"))

	return &security.CertificateResponse{Ca: bytes.Clone(s.caPEM), Crt: crtPEM}, nil
}

// sign checks a PEM CSR and signs it with the OS CA. Errors are gRPC
// statuses: InvalidArgument for anything wrong with the request.
func (s *Server) sign(csrPEM []byte) ([]byte, error) {
	if len(csrPEM) == 0 {
		return nil, status.Error(codes.InvalidArgument, "trustd: the request has no CSR")
	}

	// ParseCSRPEM also checks the CSR's signature: a request cannot name
	// a public key its sender does not hold.
	csr, err := pki.ParseCSRPEM(csrPEM)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "trustd: %v", err)
	}

	if err := checkCSR(csr); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "trustd: CSR: %v", err)
	}

	crt, err := pki.SignCSR(s.ca, csrPEM, pki.SignOptions{
		TTL:               s.ttl,
		ExtKeyUsage:       []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DropOrganizations: true,
	})
	if err != nil {
		// The CSR parsed above, so this is the CA's fault, not the caller's.
		s.log.Printf("signing failed: %v", err)
		return nil, status.Error(codes.Internal, "trustd: cannot sign the certificate (see trustd's log)")
	}

	return crt, nil
}

// checkCSR holds a CSR to what a server certificate needs. The names are
// not checked against the peer's address (Talos does not either): the
// token holder is trusted to be a node of the cluster.
func checkCSR(csr *x509.CertificateRequest) error {
	if len(csr.IPAddresses) == 0 && len(csr.DNSNames) == 0 {
		return errors.New("no IP or DNS name: a server certificate needs at least one")
	}

	switch k := csr.PublicKey.(type) {
	case ed25519.PublicKey, *ecdsa.PublicKey:
		return nil
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits {
			return fmt.Errorf("RSA key of %d bits, at least %d are required", n, minRSABits)
		}

		return nil
	default:
		return fmt.Errorf("unsupported public key type %T", csr.PublicKey)
	}
}

// parseCertificates decodes every CERTIFICATE block of data; there must
// be at least one and nothing else.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate

	for rest := data; ; {
		var block *pem.Block

		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				return nil, errors.New("trailing data that is not PEM")
			}

			break
		}

		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
		}

		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}

		out = append(out, c)
	}

	if len(out) == 0 {
		return nil, errors.New("no certificate found")
	}

	return out, nil
}

func encodeCertificate(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
