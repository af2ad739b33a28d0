package platform

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// MaxConfigSize caps a config read from a file or URL: a config is tens of
// kilobytes, and an endless stream must not exhaust PID 1's memory.
const MaxConfigSize = 4 << 20

// FetchConfig reads the config talos.config= names: an http(s) URL, a
// data: URL (RFC 2397, for a small config inline on the kernel command
// line), or a file path. http(s) URLs are retried with backoff until ctx
// ends, because on metal the network may come up after the first try.
func FetchConfig(ctx context.Context, source string) ([]byte, error) {
	if strings.HasPrefix(source, "data:") {
		return decodeDataURL(source)
	}

	if !strings.HasPrefix(source, "http://") && !strings.HasPrefix(source, "https://") {
		f, err := os.Open(source)
		if err != nil {
			return nil, fmt.Errorf("read config %s: %w", source, err)
		}
		defer f.Close()

		return readCapped(f, source)
	}

	backoff := 250 * time.Millisecond

	for attempt := 1; ; attempt++ {
		data, retry, err := FetchOnce(ctx, source)
		if err == nil {
			return data, nil
		}

		if !retry || attempt >= 5 {
			return nil, err
		}

		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}

		backoff *= 2
	}
}

// ErrNotFound is FetchOnce's error for a URL its server does not have.
var ErrNotFound = errors.New("404 Not Found")

// FetchOnce makes one GET of an http(s) URL, its body capped at
// MaxConfigSize; retry says whether another attempt could succeed
// (network trouble and server errors, not a 404, which is ErrNotFound, or
// an oversized body).
func FetchOnce(ctx context.Context, url string) (data []byte, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("fetch config %s: %w", url, err)
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("fetch config: %w", err)
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, fmt.Errorf("fetch config %s: %w", url, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return nil, resp.StatusCode >= 500, fmt.Errorf("fetch config %s: %s", url, resp.Status)
	}

	data, err = readCapped(resp.Body, url)

	return data, false, err
}

func readCapped(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}

	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("read config %s: larger than %d bytes", name, MaxConfigSize)
	}

	return data, nil
}

// decodeDataURL decodes data:[<mediatype>][;base64],<data>; the media
// type is not checked (a config is YAML whatever it says).
func decodeDataURL(source string) ([]byte, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(source, "data:"), ",")
	if !ok {
		return nil, fmt.Errorf("read config from a data: URL: no comma before the data")
	}

	if len(payload) > base64.StdEncoding.EncodedLen(MaxConfigSize) {
		return nil, fmt.Errorf("read config from a data: URL: larger than %d bytes", MaxConfigSize)
	}

	if strings.HasSuffix(meta, ";base64") {
		// Padding is often dropped to keep a command line short.
		data, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
		if err != nil {
			return nil, fmt.Errorf("read config from a data: URL: %w", err)
		}

		return data, nil
	}

	data, err := url.PathUnescape(payload)
	if err != nil {
		return nil, fmt.Errorf("read config from a data: URL: %w", err)
	}

	return []byte(data), nil
}

// DescribeSource names a config source for the console without its
// content: a data: URL carries the config itself, secrets included.
func DescribeSource(source string) string {
	if strings.HasPrefix(source, "data:") {
		return fmt.Sprintf("a data: URL (%d bytes)", len(source))
	}

	return source
}
