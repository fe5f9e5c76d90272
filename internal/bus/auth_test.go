package bus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func TestClientAuthRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present.pem")
	if err := os.WriteFile(present, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.creds")
	tests := []struct {
		name string
		auth ClientAuth
		want string
	}{
		{"creds file missing", ClientAuth{CredsFile: missing}, "nats creds file: stat " + missing},
		{"nkey file missing", ClientAuth{NkeyFile: missing}, "nats nkey file: stat " + missing},
		{"nkey file without a seed", ClientAuth{NkeyFile: present}, "nats nkey file " + present + ": nkey seed"},
		{"creds and nkey", ClientAuth{CredsFile: present, NkeyFile: present}, "not both"},
		{"CA file missing", ClientAuth{TLSCAFile: missing}, "nats CA file: stat " + missing},
		{"certificate without its key", ClientAuth{TLSCertFile: present}, "give both the certificate and its key"},
		{"key without its certificate", ClientAuth{TLSKeyFile: present}, "give both the certificate and its key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.auth.Options()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Options() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestClientAuthTrustsTheGivenCA: a server whose certificate a private CA signs is reached with that CA, and
// refused without it.
func TestClientAuthTrustsTheGivenCA(t *testing.T) {
	dir := t.TempDir()
	caFile, serverTLS := privateCA(t, dir)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, TLSConfig: serverTLS,
		TLS: true, TLSTimeout: 2})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	url := "tls://" + srv.Addr().String()

	if nc, _, err := Connect(url, t.Name()); err == nil {
		nc.Close()
		t.Fatal("connected without the CA, want the certificate refused")
	}
	opts, err := ClientAuth{TLSCAFile: caFile}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, _, err := Connect(url, t.Name(), opts...)
	if err != nil {
		t.Fatalf("connect with the CA: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Error("connection is not TLS")
	}
}

// privateCA writes a CA certificate to dir and returns its path and a server TLS config for 127.0.0.1 signed by it.
func privateCA(t *testing.T, dir string) (string, *tls.Config) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleetflow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serverTemplate := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTemplate, caCert, &serverKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}}}
}

// TestEmbeddedServerRefusesListenAddressesItCannotTake: an address that cannot be listened on is refused
// with the reason, and only a taken port is blamed on another fleetflow part.
func TestEmbeddedServerRefusesListenAddressesItCannotTake(t *testing.T) {
	tests := []struct{ listen, want, notWant string }{
		{"127.0.0.1:99999", `embedded nats listen address "127.0.0.1:99999": port 99999: want 0 (any free port) to 65535`, ""},
		{"127.0.0.1:-5", `embedded nats listen address "127.0.0.1:-5": port -5: want 0 (any free port) to 65535`, ""},
		{"127.0.0.1", `embedded nats listen address "127.0.0.1": address 127.0.0.1: missing port in address`, ""},
		{"192.0.2.1:4999", "embedded nats cannot listen on 192.0.2.1:4999: listen tcp 192.0.2.1:4999: ",
			"another fleetflow part"},
	}
	for _, tt := range tests {
		t.Run(tt.listen, func(t *testing.T) {
			srv, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: tt.listen})
			if err == nil {
				srv.Shutdown()
				t.Fatalf("started on %s", tt.listen)
			}
			if !strings.Contains(err.Error(), tt.want) || (tt.notWant != "" && strings.Contains(err.Error(), tt.notWant)) {
				t.Errorf("error %q, want it to hold %q and not %q", err, tt.want, tt.notWant)
			}
		})
	}
}

// TestEmbeddedServerSaysItsPortIsTaken: a second embedded server on a taken port fails naming the address
// and what to do (before, it waited 30 s for a server that could not listen, then said it was not ready).
func TestEmbeddedServerSaysItsPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	srv, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: l.Addr().String()})
	if err == nil {
		srv.Shutdown()
		t.Fatal("started on a taken port")
	}
	if !strings.Contains(err.Error(), "cannot listen on "+l.Addr().String()) || !strings.Contains(err.Error(), "--nats-url") {
		t.Errorf("error %q, want the address and the way out", err)
	}
}
