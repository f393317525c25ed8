package memory

import (
	"fmt"
	"strings"

	"github.com/loomctx/loom/config"
)

// CategoriesOf returns the categories loom.yaml's memory section names, in
// its order, or DefaultCategories when it names none.
func CategoriesOf(cfg *config.Config) []Category {
	if len(cfg.Memory.Categories) == 0 {
		return DefaultCategories
	}
	cats := make([]Category, len(cfg.Memory.Categories))
	for i, c := range cfg.Memory.Categories {
		cats[i] = Category{Name: c.Name, Label: c.Label}
	}
	return cats
}

// UnknownCategoryError is returned for a category name that is not among
// the configured ones.
type UnknownCategoryError struct {
	Name  string
	Valid []string
}

func (e *UnknownCategoryError) Error() string {
	return fmt.Sprintf("unknown memory category %q (valid: %s)", e.Name, strings.Join(e.Valid, ", "))
}

// Names returns the names of cats in priority order.
func Names(cats []Category) []string {
	names := make([]string, len(cats))
	for i, c := range cats {
		names[i] = c.Name
	}
	return names
}

// CheckCategory returns an *[UnknownCategoryError] unless name is one of
// cats.
func CheckCategory(cats []Category, name string) error {
	for _, c := range cats {
		if c.Name == name {
			return nil
		}
	}
	return &UnknownCategoryError{Name: name, Valid: Names(cats)}
}

// CheckCategories reports the first problem with a category list, as
// loom.yaml would give it: no categories, an empty name or label, or a
// name given twice.
func CheckCategories(cats []Category) error {
	if len(cats) == 0 {
		return fmt.Errorf("no memory categories")
	}
	seen := make(map[string]bool, len(cats))
	for i, c := range cats {
		switch {
		case strings.TrimSpace(c.Name) == "":
			return fmt.Errorf("memory category %d: empty name", i+1)
		case strings.TrimSpace(c.Label) == "":
			return fmt.Errorf("memory category %q: empty label", c.Name)
		case seen[c.Name]:
			return fmt.Errorf("memory category %q: listed twice", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}
