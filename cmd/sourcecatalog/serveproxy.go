package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// proxyFlags are serve's trusted-proxy flags: --trusted-proxy,
// --trusted-proxy-header and --trusted-proxy-secret-file.
type proxyFlags struct {
	prefixes   prefixesFlag
	header     stringFlag
	secretFile stringFlag
}

func (p *proxyFlags) register(fs *flag.FlagSet) {
	fs.Var(&p.prefixes, "trusted-proxy", "")
	fs.Var(&p.header, "trusted-proxy-header", "")
	fs.Var(&p.secretFile, "trusted-proxy-secret-file", "")
}

// any reports whether a trusted-proxy flag was given.
func (p *proxyFlags) any() bool { return p.prefixes.set || p.header.set || p.secretFile.set }

// checkProxy reports the first problem of a command line with a
// trusted-proxy flag.
func (f *serveFlags) checkProxy() error {
	p := &f.proxy
	switch {
	case !p.prefixes.set || !p.header.set:
		return errors.New("--trusted-proxy CIDR[,CIDR] and --trusted-proxy-header NAME go together")
	case f.insecure.set || f.clientCA.set || f.tokens.set:
		return errors.New("--trusted-proxy authenticates by the proxy's header: --client-ca, --tokens and --insecure-no-auth do not go with it")
	case f.tlsCert.set != f.tlsKey.set:
		return errors.New("--tls-cert FILE and --tls-key FILE go together")
	case !f.tlsCert.set && !privateAddr(f.listen.s):
		return errors.New("--trusted-proxy over plain HTTP needs --listen on a loopback or private address, such as 127.0.0.1:8080 or 10.0.0.5:8080 (or give --tls-cert and --tls-key)")
	}
	// The secret is read later; a placeholder of its bounds stands for it.
	c := httpbinding.ProxyConfig{Proxies: p.prefixes.list, Header: p.header.s}
	if p.secretFile.set {
		c.Secret = strings.Repeat("s", httpbinding.MinProxySecret)
	}
	if _, err := httpbinding.NewTrustedProxy(c); err != nil {
		if c.InsecureNoSecret = true; !p.secretFile.set {
			if _, insecure := httpbinding.NewTrustedProxy(c); insecure == nil {
				return errors.New("--trusted-proxy on addresses that are not loopback needs --trusted-proxy-secret-file FILE: without the proxy's secret, anything connecting from them could name any vessel")
			}
		}
		return fmt.Errorf("--trusted-proxy: %w", err)
	}
	return nil
}

// privateAddr reports whether addr is HOST:PORT with HOST a loopback or
// private IP address: where a proxy's plain HTTP may reach serve.
func privateAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsPrivate())
}

// proxyCredentials returns the trusted-proxy Authenticator and, with
// --tls-cert, the TLS configuration (nil for plain HTTP).
func (f *serveFlags) proxyCredentials() (httpbinding.Authenticator, *tls.Config, string, error) {
	c := httpbinding.ProxyConfig{Proxies: f.proxy.prefixes.list, Header: f.proxy.header.s}
	if f.proxy.secretFile.set {
		secret, err := readSecretFile(f.proxy.secretFile.s)
		if err != nil {
			return nil, nil, "", fmt.Errorf("--trusted-proxy-secret-file: %w", err)
		}
		c.Secret = secret
	}
	auth, err := httpbinding.NewTrustedProxy(c)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--trusted-proxy: %w", err)
	}
	if !f.tlsCert.set {
		return auth, nil, "trusted_proxy", nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert.s, f.tlsKey.s)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	return auth, httpbinding.ServerTLSConfig(cert, nil), "trusted_proxy", nil
}

// readSecretFile reads a secret of one line, its line end (LF or CRLF)
// dropped, at most httpbinding.MaxProxySecret bytes; NewTrustedProxy
// checks the rest. The error never holds the secret.
func readSecretFile(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, httpbinding.MaxProxySecret+3))
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if len(s) > httpbinding.MaxProxySecret || strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s must hold one line of at most %d characters", path, httpbinding.MaxProxySecret)
	}
	return s, nil
}

// prefixesFlag is --trusted-proxy CIDR[,CIDR]: prefixes, or addresses
// taken as prefixes of one address, given once.
type prefixesFlag struct {
	list []netip.Prefix
	set  bool
}

func (f *prefixesFlag) String() string { return "" }
func (f *prefixesFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	for _, part := range strings.Split(s, ",") {
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil || a.Zone() != "" {
				return fmt.Errorf("%q is not an address or a prefix such as 10.0.0.0/24", part)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		f.list = append(f.list, p)
	}
	f.set = true
	return nil
}
