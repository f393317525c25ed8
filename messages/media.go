package messages

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Default media limits. Providers reject larger requests (Anthropic takes
// 5 MB per image); the total keeps a turn with many images under the request
// size gateways accept.
const (
	DefaultMaxImageBytes = 5 << 20
	DefaultMaxMediaBytes = 20 << 20
)

// MediaLimits caps the images of one turn. Zero fields take the defaults.
type MediaLimits struct {
	MaxImageBytes int64
	MaxMediaBytes int64
}

func (l MediaLimits) withDefaults() MediaLimits {
	if l.MaxImageBytes <= 0 {
		l.MaxImageBytes = DefaultMaxImageBytes
	}
	if l.MaxMediaBytes <= 0 {
		l.MaxMediaBytes = DefaultMaxMediaBytes
	}
	return l
}

// DropCode says why an attachment was left out.
type DropCode string

// Why attachments are dropped.
const (
	DropMissing    DropCode = "missing"
	DropDir        DropCode = "directory"
	DropIrregular  DropCode = "not_regular_file"
	DropEmpty      DropCode = "empty"
	DropUnreadable DropCode = "unreadable"
	DropNotImage   DropCode = "not_image"
	DropCorrupt    DropCode = "corrupt"
	DropTooLarge   DropCode = "too_large"
	DropTotal      DropCode = "total_too_large"
)

// Dropped is an attachment left out of the turn, with the reason.
type Dropped struct {
	Path   string   `json:"path"`
	Code   DropCode `json:"code"`
	Reason string   `json:"reason"`
}

// Attached is an image that made it into the turn.
type Attached struct {
	Path   string `json:"path"`
	MIME   string `json:"mime"`
	Bytes  int64  `json:"bytes"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// LoadImages reads the images at paths, in order, and returns those that
// pass: real PNG, JPEG, GIF or WebP data (sniffed, never guessed from the
// name), complete, within the per-image and total caps. Every path left out
// is in dropped with its reason. Paths are the user's own files, not
// workspace files, so they are opened directly.
func LoadImages(paths []string, limits MediaLimits) (images []Image, attached []Attached, dropped []Dropped) {
	limits = limits.withDefaults()
	var total int64
	for _, path := range paths {
		im, att, drop := loadImage(path, limits, total)
		if drop != nil {
			dropped = append(dropped, *drop)
			continue
		}
		total += att.Bytes
		images = append(images, im)
		attached = append(attached, att)
	}
	return images, attached, dropped
}

func loadImage(path string, limits MediaLimits, total int64) (Image, Attached, *Dropped) {
	drop := func(code DropCode, format string, args ...any) (Image, Attached, *Dropped) {
		return Image{}, Attached{}, &Dropped{Path: path, Code: code, Reason: fmt.Sprintf(format, args...)}
	}
	// O_NONBLOCK: opening a named pipe must not wait for a writer; the
	// fstat below then drops it as not a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return drop(DropMissing, "no such file")
		}
		return drop(DropUnreadable, "%v", unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return drop(DropUnreadable, "%v", unwrapPath(err))
	}
	switch {
	case st.IsDir():
		return drop(DropDir, "is a directory")
	case !st.Mode().IsRegular():
		return drop(DropIrregular, "not a regular file")
	case st.Size() == 0:
		return drop(DropEmpty, "empty file")
	case st.Size() > limits.MaxImageBytes:
		return drop(DropTooLarge, "%d bytes, over the %d-byte image limit", st.Size(), limits.MaxImageBytes)
	case total+st.Size() > limits.MaxMediaBytes:
		return drop(DropTotal, "%d bytes would take the turn's images to %d bytes, over the %d-byte limit", st.Size(), total+st.Size(), limits.MaxMediaBytes)
	}
	// The file may grow between Stat and Read; read one byte past the cap to
	// notice.
	data, err := io.ReadAll(io.LimitReader(f, limits.MaxImageBytes+1))
	if err != nil {
		return drop(DropUnreadable, "%v", unwrapPath(err))
	}
	n := int64(len(data))
	switch {
	case n == 0:
		return drop(DropEmpty, "empty file")
	case n > limits.MaxImageBytes:
		return drop(DropTooLarge, "over the %d-byte image limit", limits.MaxImageBytes)
	case total+n > limits.MaxMediaBytes:
		return drop(DropTotal, "%d bytes would take the turn's images over the %d-byte limit", n, limits.MaxMediaBytes)
	}
	info, err := SniffImage(data)
	if err != nil {
		var c *corruptError
		if errors.As(err, &c) {
			return drop(DropCorrupt, "%v", err)
		}
		return drop(DropNotImage, "%v", err)
	}
	im := Image{MIME: info.MIME, Data: base64.StdEncoding.EncodeToString(data)}
	return im, Attached{Path: path, MIME: info.MIME, Bytes: n, Width: info.Width, Height: info.Height}, nil
}

// unwrapPath drops the *PathError wrapper: the report already names the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ImageInfo is what sniffing learns about an image.
type ImageInfo struct {
	MIME          string
	Width, Height int
}

// ErrNotImage is returned by SniffImage for data of no supported image type.
var ErrNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// corruptError is data that starts as an image but is cut short or broken.
type corruptError struct {
	mime   string
	reason string
}

func (e *corruptError) Error() string { return e.mime + ": " + e.reason }

// SniffImage finds the image type from the data's magic bytes and checks the
// header and the end marker, so a truncated upload is refused here rather
// than by the provider. It returns ErrNotImage for anything else.
func SniffImage(data []byte) (ImageInfo, error) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return checkPNG(data)
	case bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}):
		return checkJPEG(data)
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return checkGIF(data)
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return checkWebP(data)
	}
	return ImageInfo{}, ErrNotImage
}

func checkPNG(data []byte) (ImageInfo, error) {
	const mime = "image/png"
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return ImageInfo{}, &corruptError{mime, "bad header: " + err.Error()}
	}
	// The IEND chunk (type plus 4-byte CRC) closes every complete PNG.
	if i := bytes.LastIndex(data, []byte("IEND")); i < 33 || i+8 > len(data) {
		return ImageInfo{}, &corruptError{mime, "truncated: no IEND chunk"}
	}
	return dims(mime, cfg)
}

func checkJPEG(data []byte) (ImageInfo, error) {
	const mime = "image/jpeg"
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return ImageInfo{}, &corruptError{mime, "bad header: " + err.Error()}
	}
	// Entropy-coded data stuffs every 0xFF, so FF D9 only appears as the
	// end-of-image marker (or an embedded thumbnail's).
	if bytes.LastIndex(data, []byte{0xff, 0xd9}) < 2 {
		return ImageInfo{}, &corruptError{mime, "truncated: no end-of-image marker"}
	}
	return dims(mime, cfg)
}

func checkGIF(data []byte) (ImageInfo, error) {
	const mime = "image/gif"
	cfg, err := gif.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return ImageInfo{}, &corruptError{mime, "bad header: " + err.Error()}
	}
	if data[len(data)-1] != 0x3b {
		return ImageInfo{}, &corruptError{mime, "truncated: no trailer byte"}
	}
	return dims(mime, cfg)
}

func checkWebP(data []byte) (ImageInfo, error) {
	const mime = "image/webp"
	if len(data) < 20 {
		return ImageInfo{}, &corruptError{mime, "truncated: no first chunk"}
	}
	size := int64(binary.LittleEndian.Uint32(data[4:8]))
	if size+8 > int64(len(data)) {
		return ImageInfo{}, &corruptError{mime, fmt.Sprintf("truncated: RIFF header says %d bytes, file has %d", size+8, len(data))}
	}
	switch string(data[12:16]) {
	case "VP8 ", "VP8L", "VP8X":
	default:
		return ImageInfo{}, &corruptError{mime, fmt.Sprintf("unknown first chunk %q", data[12:16])}
	}
	info := ImageInfo{MIME: mime}
	if string(data[12:16]) == "VP8X" && len(data) >= 30 {
		// The canvas size is stored minus one, in 24 bits.
		info.Width = int(uint32(data[24])|uint32(data[25])<<8|uint32(data[26])<<16) + 1
		info.Height = int(uint32(data[27])|uint32(data[28])<<8|uint32(data[29])<<16) + 1
	}
	return info, nil
}

func dims(mime string, cfg image.Config) (ImageInfo, error) {
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return ImageInfo{}, &corruptError{mime, fmt.Sprintf("bad size %dx%d", cfg.Width, cfg.Height)}
	}
	return ImageInfo{MIME: mime, Width: cfg.Width, Height: cfg.Height}, nil
}
