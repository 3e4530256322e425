package main

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// serve --insecure-no-auth takes every request as its vessel's, but not
// one that presents a credential over its plain HTTP: that is 401 and
// stages nothing (SPEC.md §11.2).
func TestServeInsecureRefusesCredentials(t *testing.T) {
	_, bodies := serveSnapshot(t, 1)
	s := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "memory", "--retain", "all", "--insecure-no-auth", vesselFlag)
	listen, _ := s.log.addrs(t)
	post := func(authorization string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/", bytes.NewReader(bodies[0]))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := post("Bearer a-token-in-clear")
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer realm="sourcecatalog", error="invalid_token"`, resp.Header.Get("WWW-Authenticate"))
	s.log.wait(t, "message", map[string]any{"outcome": "unauthenticated", "status": 401.0})
	assert.Equal(t, envelope.Staged, receiptOf(t, post("")).Status, "nothing was staged by the refused request")
}
