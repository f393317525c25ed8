package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// ModelLister is a Client that can ask its endpoint which models it serves
// (GET /models on an OpenAI-compatible endpoint, GET /v1/models on the
// Messages API). Both of loom's clients are.
type ModelLister interface {
	Models(ctx context.Context) ([]string, error)
}

// Bounds on a model list, which comes from the endpoint and is not
// trusted: its size, its length, and one id's length.
const (
	maxModelsBody = 1 << 20
	maxModels     = 1000
	maxModelID    = 256
)

// Models lists the OpenAI-compatible endpoint's model ids, in its order.
func (o *openaiClient) Models(ctx context.Context) ([]string, error) {
	return o.t.models(ctx, "/models", "", o.header())
}

// Models lists the Messages API's model ids, newest first as it answers;
// one page of up to 1,000.
func (a *anthropicClient) Models(ctx context.Context) ([]string, error) {
	path := "/v1/models"
	if a.path() == "/messages" { // the base URL already ends in /v1
		path = "/models"
	}
	return a.t.models(ctx, path, "limit=1000", a.header())
}

// models reads a model list: {"data":[{"id":…},…]}, the shape both APIs
// answer. Ids that are empty, too long or repeated are left out.
func (t *transport) models(ctx context.Context, path, query string, header http.Header) ([]string, error) {
	resp, err := t.send(ctx, http.MethodGet, path, query, nil, header)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody+1))
	if err != nil {
		return nil, t.transportError(err)
	}
	if len(raw) > maxModelsBody {
		return nil, fmt.Errorf("llm: %s: model list larger than %d bytes", t.endpoint, maxModelsBody)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("llm: %s: model list is not the JSON expected: %v", t.endpoint, err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, m := range list.Data {
		if m.ID == "" || len(m.ID) > maxModelID || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		ids = append(ids, m.ID)
		if len(ids) == maxModels {
			break
		}
	}
	return ids, nil
}
