package messages

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSniffImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		mime string
		w, h int
	}{
		{"png", pngBytes(t), "image/png", 3, 2},
		{"jpeg", jpegBytes(t), "image/jpeg", 3, 2},
		{"gif", gifBytes(t), "image/gif", 3, 2},
		{"webp", webpBytes(t), "image/webp", 0, 0},
	} {
		info, err := SniffImage(tc.data)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if info.MIME != tc.mime || info.Width != tc.w || info.Height != tc.h {
			t.Errorf("%s: got %+v, want %s %dx%d", tc.name, info, tc.mime, tc.w, tc.h)
		}
	}
}

func TestSniffImageRefusesBrokenData(t *testing.T) {
	png, jpg, gif, webp := pngBytes(t), jpegBytes(t), gifBytes(t), webpBytes(t)
	for _, tc := range []struct {
		name    string
		data    []byte
		corrupt bool
	}{
		{"text", []byte("hello, I am not a picture"), false},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), false},
		{"png signature only", png[:8], true},
		{"png cut in half", png[:len(png)/2], true},
		{"png bad IHDR", append(append([]byte{}, png[:12]...), []byte("XXXX0000000000000000000000000")...), true},
		{"jpeg magic only", []byte{0xff, 0xd8, 0xff}, true},
		{"jpeg cut before end", jpg[:len(jpg)-2], true},
		{"gif header only", gif[:6], true},
		{"gif cut", gif[:len(gif)-1], true},
		{"webp cut", webp[:len(webp)-4], true},
		{"webp bad chunk", append(append([]byte{}, webp[:12]...), []byte("ABCD\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")...), true},
	} {
		_, err := SniffImage(tc.data)
		var c *corruptError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.corrupt && !errors.As(err, &c):
			t.Errorf("%s: got %v, want a corrupt-image error", tc.name, err)
		case !tc.corrupt && !errors.Is(err, ErrNotImage):
			t.Errorf("%s: got %v, want ErrNotImage", tc.name, err)
		}
	}
}

func TestLoadImagesReportsEveryDrop(t *testing.T) {
	dir := t.TempDir()
	png := pngBytes(t)
	photo := writeFile(t, dir, "photo.jpg", png) // PNG bytes under a .jpg name
	fake := writeFile(t, dir, "fake.png", []byte("hello"))
	empty := writeFile(t, dir, "empty.png", nil)
	cut := writeFile(t, dir, "cut.png", png[:20])
	sub := filepath.Join(dir, "sub.png")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	big := writeFile(t, dir, "big.gif", append(gifBytes(t), make([]byte, 200)...))
	missing := filepath.Join(dir, "nope.png")

	images, attached, dropped := LoadImages([]string{photo, fake, empty, cut, sub, big, missing}, MediaLimits{MaxImageBytes: 150})
	if len(images) != 1 || images[0].MIME != "image/png" || images[0].Data != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("images = %+v, want photo.jpg as image/png", images)
	}
	if len(attached) != 1 || attached[0].Path != photo || attached[0].Bytes != int64(len(png)) || attached[0].Width != 3 {
		t.Errorf("attached = %+v", attached)
	}
	want := []struct {
		path string
		code DropCode
	}{
		{fake, DropNotImage}, {empty, DropEmpty}, {cut, DropCorrupt}, {sub, DropDir}, {big, DropTooLarge}, {missing, DropMissing},
	}
	if len(dropped) != len(want) {
		t.Fatalf("dropped = %+v, want %d entries", dropped, len(want))
	}
	for i, w := range want {
		if dropped[i].Path != w.path || dropped[i].Code != w.code || dropped[i].Reason == "" {
			t.Errorf("dropped[%d] = %+v, want %s %s", i, dropped[i], filepath.Base(w.path), w.code)
		}
	}
}

func TestLoadImagesTotalCap(t *testing.T) {
	dir := t.TempDir()
	png := pngBytes(t)
	a := writeFile(t, dir, "a.png", png)
	b := writeFile(t, dir, "b.png", png)
	c := writeFile(t, dir, "c.gif", gifBytes(t))
	limit := int64(len(png)) + int64(len(gifBytes(t)))
	_, attached, dropped := LoadImages([]string{a, b, c}, MediaLimits{MaxMediaBytes: limit})
	if len(attached) != 2 || attached[0].Path != a || attached[1].Path != c {
		t.Errorf("attached = %+v, want a.png and c.gif", attached)
	}
	if len(dropped) != 1 || dropped[0].Path != b || dropped[0].Code != DropTotal {
		t.Errorf("dropped = %+v, want b.png over the total", dropped)
	}
}
