package protocol

import (
	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/messages"
)

// plainTextList reads raw, a message's list of content blocks (Messages)
// or parts (Responses) named by param, when every one is a plain text
// block whose type isText accepts (see textParts), counting them toward
// MaxBlocks. ok is false for any other list, counted toward nothing: the
// caller decodes it with decodeList, which counts it.
func (t *Turn) plainTextList(param string, raw []byte, isText func(typ []byte) bool) (parts []messages.Part, ok bool, err error) {
	n, err := t.countBlocks(param, raw)
	if err != nil {
		return nil, false, err
	}
	if parts, ok := textParts(raw, n, isText); ok {
		return parts, true, nil
	}
	t.blocks -= n
	return nil, false, nil
}

// textParts reads list, a list of n content blocks or parts, when every
// one is a plain text block: an object of exactly the keys "type", a
// string isText accepts, and "text", a string, both without escapes. ok is
// false for anything else, left to the block decoder.
func textParts(list []byte, n int, isText func(typ []byte) bool) (parts []messages.Part, ok bool) {
	p := jsonscan.NewCursor(list)
	if !p.Eat('[') {
		return nil, false
	}
	parts = make([]messages.Part, 0, n)
	p.WS()
	if p.Eat(']') {
		return parts, p.Pos() == len(list)
	}
	for {
		p.WS()
		text, ok := plainTextBlock(p, isText)
		if !ok {
			return nil, false
		}
		parts = append(parts, messages.Part{Type: messages.PartText, Text: text})
		p.WS()
		if p.Eat(',') {
			continue
		}
		return parts, p.Eat(']') && p.Pos() == len(list)
	}
}

// plainTextBlock reads one plain text block at p (see textParts).
func plainTextBlock(p *jsonscan.Cursor, isText func(typ []byte) bool) (text string, ok bool) {
	if !p.Eat('{') {
		return "", false
	}
	var typ, txt []byte
	for range 2 {
		p.WS()
		key, plain := p.PlainString()
		p.WS()
		if !plain || !p.Eat(':') {
			return "", false
		}
		p.WS()
		v, plain := p.PlainString()
		if !plain {
			return "", false
		}
		switch {
		case string(key) == "type" && typ == nil:
			typ = v
		case string(key) == "text" && txt == nil:
			txt = v
		default:
			return "", false
		}
		p.WS()
		if !p.Eat(',') {
			break
		}
	}
	if !isText(typ) || txt == nil || !p.Eat('}') {
		return "", false
	}
	return string(txt), true
}
