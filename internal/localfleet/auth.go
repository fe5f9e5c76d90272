package localfleet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fleetAuth is what every apiserver of a fleet shares: the admin bearer token, the tokens of the components
// that Options.RunPods starts, and the service account keys.
type fleetAuth struct {
	token string
	// componentTokens are the bearer tokens of kube-scheduler and kube-controller-manager, by binary name.
	componentTokens map[string]string
	tokenFile       string
	saPublicFile    string
	saPrivateFile   string
}

func writeFleetAuth(dir string) (*fleetAuth, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	auth := &fleetAuth{
		token:           token,
		componentTokens: map[string]string{},
		tokenFile:       filepath.Join(dir, "tokens.csv"),
		saPublicFile:    filepath.Join(dir, "sa.pub"),
		saPrivateFile:   filepath.Join(dir, "sa.key"),
	}
	// token,user,uid,"group": system:masters bypasses RBAC, which is what a local admin wants. The
	// components get the user names that the bootstrap RBAC policy binds their cluster roles to.
	lines := auth.token + ",admin,admin,system:masters\n"
	for _, name := range []string{SchedulerBinary, ControllerManagerBinary} {
		token, err := newToken()
		if err != nil {
			return nil, err
		}
		auth.componentTokens[name] = token
		lines += fmt.Sprintf("%s,%s,%s\n", token, componentUsers[name], componentUsers[name])
	}
	if err := os.WriteFile(auth.tokenFile, []byte(lines), 0o600); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	private, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	public, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(auth.saPrivateFile, "EC PRIVATE KEY", private, 0o600); err != nil {
		return nil, err
	}
	if err := writePEM(auth.saPublicFile, "PUBLIC KEY", public, 0o644); err != nil {
		return nil, err
	}
	return auth, nil
}

func newToken() (string, error) {
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	return hex.EncodeToString(secret), nil
}

// writeServingCert writes a self-signed serving certificate for the loopback addresses as apiserver.crt and
// apiserver.key into certDir. The apiserver uses existing files in --cert-dir instead of generating its own,
// so we know the CA before the apiserver starts and kubeconfigs can embed it.
func writeServingCert(certDir, clusterName string) (caPEM []byte, err error) {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fleetflow local " + clusterName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: the certificate is its own CA for clients
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(certDir, "apiserver.key"), "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return nil, err
	}
	certFile := filepath.Join(certDir, "apiserver.crt")
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	return os.ReadFile(certFile)
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// restConfig is the admin client configuration of one apiserver. QPS is raised from client-go's default
// of 5 because seeding and tests send bursts of requests to an apiserver nobody else uses.
func restConfig(server string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             200,
		Burst:           400,
	}
}

func writeKubeconfig(path, clusterName, server string, caPEM []byte, token string) error {
	return writeKubeconfigAs(path, clusterName, server, caPEM, "admin", token)
}

// writeKubeconfigAs writes a kubeconfig for one cluster whose user, named user, authenticates with token.
func writeKubeconfigAs(path, clusterName, server string, caPEM []byte, user, token string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	config.CurrentContext = clusterName
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}
