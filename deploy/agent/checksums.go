package agent

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/ferricbm/ferric/deploy/disk"
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
	if !a.validToken(r.URL.Query().Get("agent_token")) {
		writeError(w, unauthorized())
		return
	}
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
