package httpbinding

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// DefaultProxySecretHeader is the header of a ProxyConfig's Secret when
// SecretHeader is empty.
const DefaultProxySecretHeader = "X-Sourcecatalog-Proxy-Secret"

// Bounds of a proxy's shared secret, in bytes.
const (
	MinProxySecret = 16
	MaxProxySecret = 1024
)

// A ProxyConfig describes the proxy a [TrustedProxy] trusts.
type ProxyConfig struct {
	// Proxies are the addresses the proxy connects from: each a prefix
	// without host bits (10.1.2.0/24, 127.0.0.1/32, ::1/128), none of
	// length 0. An IPv4-mapped IPv6 remote address counts as IPv4.
	Proxies []netip.Prefix
	// Header names the vessel the proxy authenticated, in the form
	// urn:uuid:<vessel> (SPEC.md §11.2).
	Header string
	// Secret, when not "", must also come in SecretHeader
	// (DefaultProxySecretHeader when empty), exactly once and equal: a
	// second check for a network where the proxy's address alone is not
	// enough. It is MinProxySecret to MaxProxySecret visible ASCII
	// characters.
	Secret       string
	SecretHeader string
	// InsecureNoSecret lets a Proxies prefix that is not loopback
	// (127.0.0.0/8, ::1) go without a Secret, which NewTrustedProxy
	// refuses otherwise: without it, anything that can connect from those
	// addresses — another container, a host on the same network — can name
	// any vessel. Set it only where the network itself guarantees that the
	// proxy alone connects from them.
	InsecureNoSecret bool
}

// TrustedProxy authenticates a request by the identity a proxy in front
// of the receiver put in a header after authenticating the vessel itself
// — typically an ingress that terminates mutual TLS and forwards over
// plain HTTP on loopback or a private network (SPEC.md §11.2). It trusts
// the header only on a connection from one of the configured proxy
// addresses, and with the shared secret when one is configured; the
// proxy must remove any such header a client sent, and must not forward
// an Authorization header without TLS, which the Handler answers 401.
//
// The header's one value is urn:uuid:<vessel>, as a vessel certificate's
// URI SAN: "uuid" in any case, the UUID in canonical lowercase form, no
// query or fragment; a proxy verifying the certificate forwards that SAN.
// A request not from a proxy address, without the header, is an error
// wrapping ErrNoCredentials; with it — a client spoofing the proxy — or
// from a proxy with the secret missing, repeated or wrong, or with the
// identity header repeated, empty or malformed, one wrapping
// ErrBadCredentials. Each is a 401 that says nothing of why.
//
// Two assumptions hold it up. The proxy's address is the request's
// RemoteAddr, the TCP peer as net/http sets it: middleware that rewrites
// RemoteAddr from a forwarded header, or leaves it without a port, makes
// every request fail here, and a handler in front that trusts forwarded
// headers must not run before it. And a loopback prefix without a secret
// trusts every process and user of the host, and every container sharing
// its network namespace: embedded in a service that shares its host, give
// the proxy a Secret anyway.
type TrustedProxy struct {
	proxies      []netip.Prefix
	header       string
	secretHeader string
	secret       *[sha256.Size]byte // nil: none
}

var _ Authenticator = (*TrustedProxy)(nil)

// NewTrustedProxy returns the TrustedProxy of c. It returns an error
// wrapping sourcecatalog.ErrInvalidValue, naming the problem, when c has
// no proxy, a prefix that is invalid, of length 0 or with host bits set,
// a header name that is not an HTTP field name or is one the binding
// reads itself (Authorization, Content-Type, ...), the same name for both
// headers, a secret out of its bounds or not visible ASCII, or no secret
// while a prefix is not loopback, unless c.InsecureNoSecret.
func NewTrustedProxy(c ProxyConfig) (*TrustedProxy, error) {
	if len(c.Proxies) == 0 {
		return nil, proxyConfigError("no proxy address")
	}
	// An IPv4-mapped prefix (::ffff:10.0.0.0/104) is taken as the IPv4
	// prefix it maps, since a remote address is unmapped before it is
	// matched; unmapped first, so that ::ffff:0.0.0.0/96 is refused below
	// as trusting every IPv4 address.
	proxies := make([]netip.Prefix, len(c.Proxies))
	for i, p := range c.Proxies {
		if a := p.Addr(); p.IsValid() && a.Is4In6() {
			if p.Bits() < 96 {
				return nil, proxyConfigError(fmt.Sprintf("proxy prefix %s spans IPv4-mapped and other IPv6 addresses", p))
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		proxies[i] = p
	}
	c.Proxies = proxies
	for _, p := range c.Proxies {
		switch {
		case !p.IsValid():
			return nil, proxyConfigError("an invalid proxy prefix")
		case p.Bits() == 0:
			return nil, proxyConfigError(fmt.Sprintf("proxy prefix %s trusts every address", p))
		case p.Masked() != p:
			return nil, proxyConfigError(fmt.Sprintf("proxy prefix %s has host bits set; did you mean %s?", p, p.Masked()))
		}
	}
	t := &TrustedProxy{proxies: c.Proxies}
	var err error
	if t.header, err = proxyHeaderName(c.Header, "the identity header"); err != nil {
		return nil, err
	}
	if c.Secret == "" {
		if c.SecretHeader != "" {
			return nil, proxyConfigError("a secret header without a secret")
		}
		for _, p := range c.Proxies {
			if !loopbackPrefix(p) && !c.InsecureNoSecret {
				return nil, proxyConfigError(fmt.Sprintf("proxy prefix %s is not loopback: give the proxy a Secret (or set InsecureNoSecret where the network alone keeps others off those addresses)", p))
			}
		}
		return t, nil
	}
	if len(c.Secret) < MinProxySecret || len(c.Secret) > MaxProxySecret || !visibleASCII(c.Secret) {
		return nil, proxyConfigError(fmt.Sprintf("the proxy secret must be %d to %d visible ASCII characters", MinProxySecret, MaxProxySecret))
	}
	if t.secretHeader, err = proxyHeaderName(cmp.Or(c.SecretHeader, DefaultProxySecretHeader), "the secret header"); err != nil {
		return nil, err
	}
	if t.secretHeader == t.header {
		return nil, proxyConfigError("the identity and secret headers must differ")
	}
	sum := sha256.Sum256([]byte(c.Secret))
	t.secret = &sum
	return t, nil
}

// Authenticate implements Authenticator.
func (t *TrustedProxy) Authenticate(r *http.Request) (finalize.Origin, error) {
	identity := r.Header.Values(t.header)
	if !t.fromProxy(r.RemoteAddr) {
		if len(identity) == 0 {
			return finalize.Origin{}, ErrNoCredentials
		}
		return finalize.Origin{}, badCredentials("the identity header " + t.header + " from " + r.RemoteAddr + ", which is not a trusted proxy")
	}
	if t.secret != nil {
		s := r.Header.Values(t.secretHeader)
		if len(s) != 1 {
			return finalize.Origin{}, badCredentials("not one proxy secret header " + t.secretHeader)
		}
		sum := sha256.Sum256([]byte(s[0]))
		if subtle.ConstantTimeCompare(sum[:], t.secret[:]) != 1 {
			return finalize.Origin{}, badCredentials("a wrong proxy secret")
		}
	}
	switch len(identity) {
	case 0:
		return finalize.Origin{}, ErrNoCredentials
	case 1:
	default:
		return finalize.Origin{}, badCredentials("the identity header " + t.header + " more than once")
	}
	id, err := vesselOfURN(identity[0])
	if err != nil {
		return finalize.Origin{}, badCredentials("the identity header " + t.header + ": " + err.Error())
	}
	return finalize.Origin{VesselID: id}, nil
}

// loopbackPrefix reports whether every address of p is loopback: within
// 127.0.0.0/8, or ::1.
func loopbackPrefix(p netip.Prefix) bool {
	a := p.Addr() // never IPv4-mapped: NewTrustedProxy unmapped it
	return a.IsLoopback() && (a.Is4() && p.Bits() >= 8 || p.Bits() == 128)
}

// fromProxy reports whether remote, a request's RemoteAddr, is an
// address of a trusted proxy.
func (t *TrustedProxy) fromProxy(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap().WithZone("")
	for _, p := range t.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// vesselOfURN parses urn:uuid:<vessel>: "urn" and "uuid" in any case
// (RFC 8141), the UUID canonical and lowercase (SPEC.md §2.1), nothing
// else — no space, query, fragment or second value.
func vesselOfURN(v string) (uuid.UUID, error) {
	const prefix = "urn:uuid:"
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return uuid.Nil, fmt.Errorf("not urn:uuid:<vessel>")
	}
	id, err := envelope.ParseUUID(v[len(prefix):])
	if err != nil {
		return uuid.Nil, fmt.Errorf("not urn:uuid: and a canonical lowercase UUID")
	}
	return id, nil
}

// headersOfTheBinding are the fields the Handler reads or net/http frames
// a request with: no proxy header may be one of them.
var headersOfTheBinding = []string{"Authorization", "Connection", "Content-Length", "Content-Type", "Host", "Transfer-Encoding", "Te", "Trailer", "Upgrade", "Proxy-Authorization", "Cookie"}

// proxyHeaderName returns the canonical form of a header name, or why it
// cannot be one.
func proxyHeaderName(name, what string) (string, error) {
	if name == "" || !isToken(name) {
		return "", proxyConfigError(fmt.Sprintf("%s %q is not an HTTP field name", what, name))
	}
	c := textproto.CanonicalMIMEHeaderKey(name)
	for _, h := range headersOfTheBinding {
		if c == h {
			return "", proxyConfigError(fmt.Sprintf("%s must not be %s", what, h))
		}
	}
	return c, nil
}

// isToken reports whether s is an RFC 9110 token of letters, digits and
// "-" (underscores, which proxies drop or rewrite, are refused too).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func proxyConfigError(why string) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: trusted proxy: "+why)
}
