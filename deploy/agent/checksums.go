package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/deploy/disk"
	"github.com/ferricbm/ferric/pkg/logging"
)

// maxChecksumLength bounds one checksums request: a few milliseconds of
// reading, so an answer never waits long behind a slow disk.
const maxChecksumLength = 64 << 20

// checksums serves GET /v1/checksums?offset=&length=&block_size=, a Ferric
// extension of the agent API: the CRC-32C of each block of the exported
// disk's bytes [offset, offset+length), read here on the node. A conductor
// verifying a deploy asks for them instead of reading the image back over
// iSCSI, so the image crosses the network once. Unlike a command it keeps
// no record and may run beside others.
func (a *Agent) checksums(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	param := func(name string, lo, hi int64) (int64, error) {
		v, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil || v < lo || v > hi {
			return 0, invalidCommand(fmt.Sprintf("%s must be an integer from %d to %d", name, lo, hi))
		}
		return v, nil
	}
	off, err := param("offset", 0, 1<<62)
	if err != nil {
		writeError(w, err)
		return
	}
	n, err := param("length", 1, maxChecksumLength)
	if err != nil {
		writeError(w, err)
		return
	}
	bs, err := param("block_size", 512, disk.MaxChecksumSpan)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := os.Open(a.cfg.Disks[0])
	if err != nil {
		writeError(w, commandExecutionError(err.Error()))
		return
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		writeError(w, commandExecutionError(err.Error()))
		return
	}
	if off+n > size {
		writeError(w, invalidCommand(fmt.Sprintf("%d bytes at offset %d go beyond the disk's %d bytes", n, off, size)))
		return
	}
	sums, err := disk.ReadBack{R: f}.Checksums(r.Context(), off, n, int(bs))
	if err != nil {
		writeError(w, commandExecutionError(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"algorithm": "crc32c", "offset": off, "block_size": bs, "checksums": sums})
}

// DiskChecksums is the disk.ChecksumSource of a remote agent: the client
// side of GET /v1/checksums, for the conductor verifying a deploy.
type DiskChecksums struct {
	// URL is the agent's API (its heartbeat callback URL); Token its agent
	// token, never shown in errors.
	URL, Token string
	Client     *http.Client
}

// Checksums asks the agent for the CRC-32C of each block of its disk's
// bytes [off, off+n).
func (c DiskChecksums) Checksums(ctx context.Context, off, n int64, blockSize int) ([]uint32, error) {
	q := url.Values{"offset": {fmt.Sprint(off)}, "length": {fmt.Sprint(n)}, "block_size": {fmt.Sprint(blockSize)}}
	base, err := url.Parse(strings.TrimRight(c.URL, "/") + "/v1/checksums")
	if err != nil {
		return nil, fmt.Errorf("agent checksums: bad agent URL: %w", err)
	}
	base.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("agent checksums: %w", err)
	}
	if c.Token != "" {
		req.Header.Set(TokenHeader, c.Token)
	}
	if id := logging.RequestID(ctx); id != "" {
		req.Header.Set(RequestIDHeader, id)
	}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the message names the URL once more
		}
		base.RawQuery = ""
		return nil, fmt.Errorf("agent checksums: %s did not answer: %w", base.Redacted(), err)
	}
	defer resp.Body.Close()
	// The largest answer (64 MiB in 512-byte blocks) is about 1.4 MB of JSON.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("agent checksums: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("agent checksums: agent answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	var out struct {
		Algorithm string   `json:"algorithm"`
		Checksums []uint32 `json:"checksums"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("agent checksums: %w", err)
	}
	if out.Algorithm != "crc32c" {
		return nil, fmt.Errorf("agent checksums: algorithm %q, want crc32c", out.Algorithm)
	}
	return out.Checksums, nil
}
