package notify

import (
	"context"
	"fmt"

	"github.com/flashseat/flashseat/booking"
)

// codeWords are the contact code's message in each of booking.Languages; any other language gets English.
var codeWords = map[string][2]string{
	"en": {"Your flashseat code: %s", "Your code to confirm this e-mail address for flashseat is %s.\n\nIt works for 15 minutes. If you did not ask for it, ignore this message.\n"},
	"hi": {"आपका flashseat कोड: %s", "flashseat के लिए इस ई-मेल पते की पुष्टि का आपका कोड %s है।\n\nयह 15 मिनट तक काम करेगा। अगर आपने इसे नहीं माँगा, तो इस संदेश को अनदेखा करें।\n"},
}

var _ booking.CodeMailer = (*Fans)(nil)

// MailCode implements booking.CodeMailer: the code that confirms c's e-mail, sent at once (not from the event
// stream: the fan is waiting for it on the page).
func (f *Fans) MailCode(ctx context.Context, c booking.Contact, code string) error {
	w, ok := codeWords[c.Language]
	if !ok {
		w = codeWords["en"]
	}
	return f.send(ctx, Message{UserID: c.UserID, To: c.Email, Language: c.Language, Kind: "contact-code",
		Subject: fmt.Sprintf(w[0], code), Text: fmt.Sprintf(w[1], code)})
}
