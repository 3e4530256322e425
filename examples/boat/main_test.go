package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"net/http/httptest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalizemem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Two runs against an in-process receiver that declares request_gzip and
// chunk_reference: the first sends every chunk whole, gzipped; the
// second, the same records again, sends its chunks by reference, in fewer
// bytes.
func TestBoat(t *testing.T) {
	const token = "boat-example-token"
	dir := t.TempDir()
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, examples.VesselID) + "\n"))
	require.NoError(t, err)
	ts := httptest.NewTLSServer(httpbinding.NewHandler(finalize.NewReceiver(finalizemem.New()), tokens,
		httpbinding.WithChunkReferences(true)))
	t.Cleanup(ts.Close)
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	args := []string{"--url", ts.URL + "/v2/messages", "--token-file", tokenFile, "--ca", caFile, "--outbox", filepath.Join(dir, "boat.db")}

	var out bytes.Buffer
	first, err := run(context.Background(), args, &out)
	require.NoError(t, err, out.String())
	second, err := run(context.Background(), args, &out)
	require.NoError(t, err, out.String())
	t.Log(out.String())

	for _, rep := range []struct {
		name string
		r    outbox.DrainReport
	}{{"first", first.DrainReport}, {"second", second.DrainReport}} {
		assert.Equal(t, outbox.Drained, rep.r.Outcome, rep.name)
		assert.Positive(t, rep.r.Delivered, rep.name)
		assert.Less(t, rep.r.Bytes.Sent, rep.r.Bytes.Uncompressed, "%s: gzipped, as the receiver declares request_gzip", rep.name)
	}
	assert.Zero(t, first.Referenced, "nothing delivered before to refer to")
	assert.Equal(t, second.Delivered-1, second.Referenced, "every chunk of the second run by reference, its manifest whole")
	assert.Zero(t, second.SentWhole)
	assert.Less(t, second.Bytes.Sent, first.Bytes.Sent)
	assert.Zero(t, second.Pending)
	assert.Contains(t, out.String(), "delivered: ")
}
