package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/strictjson"

	"github.com/flashseat/flashseat/booking"
)

// decode reads the request body as one JSON value into v. Malformed JSON, wrong types and trailing data are
// booking.ErrInvalid, described without echoing the input.
func decode(c *fiber.Ctx, v any) error {
	// Unmarshal (not a Decoder) also refuses data after the value, and costs less per request.
	return decodeWith(c, v, json.Unmarshal)
}

// decodeStrict is decode for the operators' writes: a member v has no field for (a misspelt setting, which
// would otherwise change nothing and answer 200) is booking.ErrValidation naming its path, and nothing of the
// request is applied.
func decodeStrict(c *fiber.Ctx, v any) error {
	return decodeWith(c, v, strictjson.Unmarshal)
}

func decodeWith(c *fiber.Ctx, v any, unmarshal func([]byte, any) error) error {
	body := c.Body()
	return invalidBody(body, unmarshal(body, v))
}

// invalidBody describes err, reading body, for the client: unknown fields by their paths, a wrong type by its
// field, anything else as malformed, without echoing the input; nil stays nil.
func invalidBody(body []byte, err error) error {
	if err == nil {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return booking.Invalid("the request needs a JSON body")
	}
	var ue *strictjson.UnknownFieldError
	if errors.As(err, &ue) {
		return fmt.Errorf("%w: %w", booking.ErrValidation, ue)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return booking.Invalid("field %q has the wrong type (want %s)", te.Field, te.Type)
	}
	return booking.Invalid("the body is not one valid JSON value")
}

// pathID reads an id path parameter, copied out of fiber's buffer. Anything that cannot be one of our ids is
// unknown.
func pathID(c *fiber.Ctx, name, what string) (string, error) {
	id := c.Params(name)
	if !booking.ValidID(id) {
		return "", fmt.Errorf("%s: %w", what, booking.ErrNotFound)
	}
	return string([]byte(id)), nil
}

// The request headers every hold reads, each name in the canonical form fasthttp stores request headers under
// (it normalises their case as it parses them), for header.
var (
	headerXRequestID      = canonicalHeader(fiber.HeaderXRequestID)
	headerContentEncoding = canonicalHeader(fiber.HeaderContentEncoding)
	headerCookie          = canonicalHeader(fiber.HeaderCookie)
	headerAdmission       = canonicalHeader(admission.Header)
	headerIdempotencyKey  = canonicalHeader("Idempotency-Key")
	headerAcceptLanguage  = canonicalHeader(fiber.HeaderAcceptLanguage)
)

func canonicalHeader(name string) []byte { return fasthttp.AppendNormalizedHeaderKey(nil, name) }

// header is Ctx.Get for a name made by canonicalHeader: Get copies and normalises the name on every call, and a
// hold reads half a dozen headers. Like Get's, the value points into fiber's buffer: copy it to keep it.
func header(c *fiber.Ctx, name []byte) string {
	return utils.UnsafeString(c.Request().Header.PeekCanonical(name))
}
