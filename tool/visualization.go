package tool

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Visualization types of the guide (REFERENCE §6). A visualization is drawn for people and
// never sent to a model.
const (
	VizDiff               = "diff"
	VizDiffs              = "diffs"
	VizCode               = "code"
	VizFileList           = "file-list"
	VizTable              = "table"
	VizMarkdown           = "markdown"
	VizShellOutput        = "shell-output"
	VizTodoList           = "todo-list"
	VizStructuredResponse = "structured-response"
	VizNone               = "none"
	// VizImages shows images: the image blocks of a result's content (ImagesVisualization),
	// each base64 bytes of a type browsers draw safely.
	VizImages = "images"
)

// ImageTypes are the media types an images visualization may carry: raster formats only
// (an SVG could hold script).
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// field kinds used by the checker.
type kind int

const (
	kString kind = iota
	kNumber
	kBool
	kArray
	kObject
	kAny
)

type fieldRule struct {
	kind     kind
	required bool
	enum     []string
	check    func(path string, v any) error // deeper check for arrays/objects
}

var vizRules = map[string]map[string]fieldRule{
	VizDiff: {
		"path": {kind: kString, required: true}, "language": {kind: kString},
		"hunks":     {kind: kArray, required: true, check: eachObject(hunkRules)},
		"additions": {kind: kNumber, required: true}, "deletions": {kind: kNumber, required: true},
	},
	VizDiffs: {"items": {kind: kArray, required: true}}, // items are diffs: checked in checkViz
	VizCode: {
		"path": {kind: kString, required: true}, "content": {kind: kString, required: true},
		"language": {kind: kString}, "created": {kind: kBool, required: true},
		"highlightLines": {kind: kArray}, "lineCount": {kind: kNumber},
	},
	VizFileList: {
		"files":  {kind: kArray, check: eachObject(fileEntryRules)},
		"groups": {kind: kArray, check: eachObject(groupRules)},
		"total":  {kind: kNumber},
	},
	VizTable: {
		"columns":   {kind: kArray, required: true, check: eachObject(columnRules)},
		"rows":      {kind: kArray, required: true, check: eachObject(nil)},
		"totalRows": {kind: kNumber}, "hasMore": {kind: kBool},
	},
	VizMarkdown:           {"content": {kind: kString, required: true}, "sourceUrl": {kind: kString}},
	VizShellOutput:        {"command": {kind: kString, required: true}, "stdout": {kind: kString}, "stderr": {kind: kString}, "exitCode": {kind: kNumber, required: true}},
	VizTodoList:           {"items": {kind: kArray, required: true, check: eachObject(todoRules)}},
	VizStructuredResponse: {"data": {kind: kAny, required: true}, "schema": {kind: kObject}, "formatName": {kind: kString}},
	VizNone:               {"message": {kind: kString}},
	VizImages:             {"images": {kind: kArray, required: true, check: eachObject(imageRules)}},
}

var (
	hunkRules = map[string]fieldRule{
		"oldStart": {kind: kNumber, required: true}, "oldLines": {kind: kNumber, required: true},
		"newStart": {kind: kNumber, required: true}, "newLines": {kind: kNumber, required: true},
		"changes": {kind: kArray, required: true, check: eachObject(changeRules)},
	}
	changeRules = map[string]fieldRule{
		"type":          {kind: kString, required: true, enum: []string{"added", "removed", "context"}},
		"content":       {kind: kString, required: true},
		"oldLineNumber": {kind: kNumber}, "newLineNumber": {kind: kNumber},
	}
	fileEntryRules = map[string]fieldRule{
		"path":   {kind: kString, required: true},
		"action": {kind: kString, enum: []string{"created", "modified", "deleted"}},
		"line":   {kind: kNumber}, "content": {kind: kString},
	}
	groupRules = map[string]fieldRule{
		"label": {kind: kString, required: true},
		"icon":  {kind: kString, enum: []string{"edit", "plus", "trash", "search"}},
		"files": {kind: kArray, required: true, check: eachObject(fileEntryRules)},
	}
	columnRules = map[string]fieldRule{
		"key": {kind: kString, required: true}, "label": {kind: kString}, "width": {kind: kAny},
	}
	imageRules = map[string]fieldRule{
		"mimeType": {kind: kString, required: true, enum: ImageTypes},
		"data":     {kind: kString, required: true}, "alt": {kind: kString},
	}
	todoRules = map[string]fieldRule{
		"content":  {kind: kString, required: true},
		"status":   {kind: kString, required: true, enum: []string{"pending", "in_progress", "completed", "cancelled"}},
		"priority": {kind: kString, enum: []string{"high", "medium", "low"}},
	}
)

// CheckVisualization reports what is wrong with a visualization, naming the field. Unknown
// extra fields are allowed (clients ignore them); missing or mistyped known ones are not.
func CheckVisualization(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("visualization is not valid JSON: %w", err)
	}
	return checkViz("visualization", v, "")
}

// commonVizFields are the fields every visualization type may have.
var commonVizFields = map[string]fieldRule{"title": {kind: kString}, "collapsed": {kind: kBool}}

func checkViz(path string, v any, want string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s is not an object", path)
	}
	typ, _ := obj["type"].(string)
	rules, known := vizRules[typ]
	if !known {
		return fmt.Errorf("%s.type %q is not a visualization type: use one of %s", path, typ, strings.Join(vizTypeNames(), ", "))
	}
	if want != "" && typ != want {
		return fmt.Errorf("%s.type is %q; %q expected here", path, typ, want)
	}
	if err := checkFields(path, obj, commonVizFields); err != nil {
		return err
	}
	if err := checkFields(path, obj, rules); err != nil {
		return err
	}
	if typ == VizDiffs {
		for i, item := range obj["items"].([]any) {
			if err := checkViz(fmt.Sprintf("%s.items[%d]", path, i), item, VizDiff); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFields(path string, obj map[string]any, rules map[string]fieldRule) error {
	for name, r := range rules {
		val, present := obj[name]
		p := path + "." + name
		if !present || val == nil {
			if r.required {
				return fmt.Errorf("%s is missing", p)
			}
			continue
		}
		if err := checkKind(p, val, r.kind); err != nil {
			return err
		}
		if len(r.enum) > 0 {
			s := val.(string)
			found := false
			for _, e := range r.enum {
				found = found || e == s
			}
			if !found {
				return fmt.Errorf("%s is %q: use one of %s", p, s, strings.Join(r.enum, ", "))
			}
		}
		if r.check != nil {
			if err := r.check(p, val); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkKind(p string, v any, k kind) error {
	ok := true
	var want string
	switch k {
	case kString:
		_, ok = v.(string)
		want = "a string"
	case kNumber:
		_, ok = v.(float64)
		want = "a number"
	case kBool:
		_, ok = v.(bool)
		want = "a boolean"
	case kArray:
		_, ok = v.([]any)
		want = "an array"
	case kObject:
		_, ok = v.(map[string]any)
		want = "an object"
	}
	if !ok {
		return fmt.Errorf("%s must be %s", p, want)
	}
	return nil
}

func eachObject(rules map[string]fieldRule) func(string, any) error {
	return func(p string, v any) error {
		for i, item := range v.([]any) {
			ip := fmt.Sprintf("%s[%d]", p, i)
			obj, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("%s must be an object", ip)
			}
			if err := checkFields(ip, obj, rules); err != nil {
				return err
			}
		}
		return nil
	}
}

func vizTypeNames() []string {
	return []string{VizDiff, VizDiffs, VizCode, VizFileList, VizTable, VizMarkdown, VizShellOutput, VizTodoList, VizStructuredResponse, VizNone, VizImages}
}
