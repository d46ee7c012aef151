package app

import (
	"github.com/flashseat/flashseat/waitroom/siteverify"
)

// humanCheck reads the human check a show's join may require: HUMAN_CHECK names the provider (turnstile, hcaptcha
// or recaptcha; unset, the check is off), HUMAN_CHECK_SITE_KEY and HUMAN_CHECK_SECRET its keys, and
// HUMAN_CHECK_VERIFY_URL, HUMAN_CHECK_SCRIPT_URL and HUMAN_CHECK_HOSTNAME optional overrides (siteverify.Config).
// A provider without its keys, or keys without a provider, stop the start: found now, not at a crowd's first
// join, and not silently off. No message quotes the secret.
func (l *loader) humanCheck(cfg *Config) {
	c := siteverify.Config{
		Provider:  l.String("HUMAN_CHECK", ""),
		SiteKey:   l.String("HUMAN_CHECK_SITE_KEY", ""),
		Secret:    l.String("HUMAN_CHECK_SECRET", ""),
		VerifyURL: l.String("HUMAN_CHECK_VERIFY_URL", ""),
		ScriptURL: l.String("HUMAN_CHECK_SCRIPT_URL", ""),
		Hostname:  l.String("HUMAN_CHECK_HOSTNAME", ""),
	}
	switch {
	case c.Provider == "":
		if c != (siteverify.Config{}) {
			l.Fail("HUMAN_CHECK_* are set but HUMAN_CHECK is not: name the provider (turnstile, hcaptcha or " +
				"recaptcha) or unset them")
		}
		return
	case c.SiteKey == "" || c.Secret == "":
		l.Fail("HUMAN_CHECK=%s needs HUMAN_CHECK_SITE_KEY and HUMAN_CHECK_SECRET", c.Provider)
		return
	}
	v, err := siteverify.New(c)
	if err != nil {
		l.Fail("HUMAN_CHECK: %v", err)
		return
	}
	cfg.HumanCheck = v
}
