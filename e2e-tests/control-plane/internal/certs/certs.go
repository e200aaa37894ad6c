// Package certs makes the certificates of one control-plane run: a certificate authority, the
// serving certificates of the API server and the webhooks, and the client certificates of the
// identities the harness acts as. They are made anew for every run and live in its directory.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Authority signs every certificate of a run.
type Authority struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewAuthority makes a self-signed certificate authority.
func NewAuthority() (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "restage-gate-control-plane-ca"}, key)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: ca, Key: key, CertPEM: encodeCert(ca)}, nil
}

// KeyPEM is the authority's private key, for the controller manager's certificate signer.
func (a *Authority) KeyPEM() ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(a.Key)
}

// Pair is a certificate and its key, PEM-encoded.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Serving signs a serving certificate for 127.0.0.1 and localhost, the only addresses the
// control plane binds.
func (a *Authority) Serving(commonName string) (Pair, error) {
	return a.sign(x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Client signs a client certificate: the API server reads the user name from the common name
// and the groups from the organisations.
func (a *Authority) Client(user string, groups ...string) (Pair, error) {
	return a.sign(x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (a *Authority) sign(template x509.Certificate) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Pair{}, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Minute)
	template.NotAfter = time.Now().Add(48 * time.Hour)
	template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &template, a.Cert, key.Public(), a.Key)
	if err != nil {
		return Pair{}, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return Pair{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: encodeCert(leaf), KeyPEM: keyPEM}, nil
}

// Write stores the pair as DIR/NAME.crt and DIR/NAME.key and returns both paths.
func (p Pair) Write(dir, name string) (certFile, keyFile string, err error) {
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err = os.WriteFile(certFile, p.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err = os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// ServiceAccountKey writes the key pair the API server signs service account tokens with.
func ServiceAccountKey(dir string) (privateFile, publicFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	private, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", "", err
	}
	publicDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", err
	}
	privateFile = filepath.Join(dir, "service-account.key")
	publicFile = filepath.Join(dir, "service-account.pub")
	if err := os.WriteFile(privateFile, private, 0o600); err != nil {
		return "", "", err
	}
	public := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: publicDER})
	if err := os.WriteFile(publicFile, public, 0o600); err != nil {
		return "", "", err
	}
	return privateFile, publicFile, nil
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// LoadAuthority reads the authority a run wrote as DIR/ca.crt and DIR/ca.key, for components
// that sign serving certificates of their own.
func LoadAuthority(dir string) (*Authority, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", filepath.Join(dir, "ca.key"))
	}
	return &Authority{Cert: certs[0], Key: signer, CertPEM: certPEM}, nil
}
