package disk

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxConfigDrive bounds a decoded config drive; Ironic's own limit for
// whole-disk images is 64 MiB and partition images have no use for more.
const maxConfigDrive = 64 << 20

// DecodeConfigDrive turns instance_info's configdrive into the bytes to
// write: the value (or, when it is an http(s) URL, the body it points to)
// is base64, usually of a gzip-compressed ISO 9660 image.
func DecodeConfigDrive(ctx context.Context, value string, client *http.Client) ([]byte, error) {
	if strings.HasPrefix(value, "http://") || strings.HasPrefix(value, "https://") {
		body, err := fetchConfigDrive(ctx, value, client)
		if err != nil {
			return nil, err
		}
		value = string(body)
	}
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, value)
	raw, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("config drive is not base64 encoded or the content is malformed: %w", err)
	}
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		// Not compressed: written as it is.
		return raw, checkConfigDriveSize(int64(len(raw)))
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("config drive: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxConfigDrive+1))
	if err != nil {
		return nil, fmt.Errorf("config drive: decompress: %w", err)
	}
	return out, checkConfigDriveSize(int64(len(out)))
}

func checkConfigDriveSize(n int64) error {
	if n == 0 {
		return fmt.Errorf("config drive is empty")
	}
	if n > maxConfigDrive {
		return fmt.Errorf("config drive is larger than %d MiB", maxConfigDrive>>20)
	}
	return nil
}

func fetchConfigDrive(ctx context.Context, raw string, client *http.Client) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	shown := raw
	if u, err := url.Parse(raw); err == nil {
		// Temporary URLs carry their signature in the query.
		u.RawQuery = ""
		shown = u.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("config drive URL %s: %w", shown, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download config drive from %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download config drive from %s: HTTP status %s", shown, resp.Status)
	}
	// base64 of a 64 MiB gzip stream is at most ~86 MiB.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4*maxConfigDrive/3+1024))
	if err != nil {
		return nil, fmt.Errorf("download config drive from %s: %w", shown, err)
	}
	return body, nil
}
