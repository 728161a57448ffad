package publish_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/pkg/config"
)

// floppySize is a 1.44 MB floppy image, the size of the iLO parameter
// floppy.
const floppySize = 1474560

func benchPublishAndURL(b *testing.B, p publish.Publisher) {
	ctx := context.Background()
	content := bytes.Repeat([]byte{0xf6}, floppySize)
	b.SetBytes(floppySize)
	for b.Loop() {
		if err := p.Publish(ctx, "image-bench", bytes.NewReader(content), 15*time.Minute); err != nil {
			b.Fatal(err)
		}
		if _, err := p.URL(ctx, "image-bench", 15*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := p.Delete(ctx, "image-bench"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWebServerPublishAndURL writes a floppy under the HTTP root and
// signs its URL.
func BenchmarkWebServerPublishAndURL(b *testing.B) {
	p, err := publish.NewWebServer(filepath.Join(b.TempDir(), "vmedia"), "http://127.0.0.1:8088/")
	if err != nil {
		b.Fatal(err)
	}
	benchPublishAndURL(b, p)
}

// BenchmarkSwiftPublishAndURL uploads a floppy to the Swift all-in-one and
// signs its temporary URL (the account key is cached between URLs).
func BenchmarkSwiftPublishAndURL(b *testing.B) {
	auth, err := swiftAIO()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	sw := config.Swift{AuthType: "tempauth", AuthURL: auth, Username: swiftUser, Password: swiftKey}
	container := uniqueName("ferric-bench")
	p, err := publish.NewSwift(ctx, sw, container)
	if err != nil {
		b.Fatal(err)
	}
	benchPublishAndURL(b, p)
	req, err := http.NewRequest(http.MethodGet, auth, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Auth-User", swiftUser)
	req.Header.Set("X-Auth-Key", swiftKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	del, err := http.NewRequest(http.MethodDelete, resp.Header.Get("X-Storage-Url")+"/"+container, nil)
	if err != nil {
		b.Fatal(err)
	}
	del.Header.Set("X-Auth-Token", resp.Header.Get("X-Auth-Token"))
	if resp, err := http.DefaultClient.Do(del); err == nil {
		resp.Body.Close()
	}
}
