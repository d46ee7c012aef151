package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestConsoleLanesInBrowser: an operator gives a show a fan club lane (0.7) and the general lane (0.3); one fan
// invited to the fan club (the invitation's copy written as a wave writes it) and two uninvited fans join through
// the real edge and booking; the show's card in the console's Shows panel shows a table of the lanes, each with
// its share and its fans waiting, then, once the rate lets them in, each lane's admissions. No route is stubbed
// and any console error fails the test.
func TestConsoleLanesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	ctx := context.Background()
	show := newShow(t, c, showSpec{title: "Hayavadana " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true,
		admitRate: 0.01})
	lanes := []fsclient.Lane{{Name: "fanclub", Share: 0.7}, {Name: "general", Share: 0.3}}
	if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 0.01, MaxActive: 50,
		TokenTTLSeconds: 600, Lanes: lanes}); err != nil {
		t.Fatal(err)
	}
	rdb := platformRedis(t, p)
	fans := []fsclient.Guest{guestFan(t, c), guestFan(t, c), guestFan(t, c)}
	club := fans[0].UserID
	if err := rdb.HSet(ctx, rediskey.Invitation(show, club), club, "fanclub").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), rediskey.Invitation(show, club)) })
	for i, f := range fans {
		if q, res, err := c.Join(ctx, f.Token, show, ""); err != nil || q.Status != "waiting" {
			t.Fatalf("fan %d: %+v %d %v", i, q, res.Status, err)
		}
	}

	op, _, text := consoleOperator(t, p)
	card := `article[data-show="` + show + `"]`
	row := func(lane string) string {
		return `[...document.querySelectorAll('` + card + ` table.lanes tbody tr[data-lane="` + lane + `"] td')].map((d) => d.textContent).join("|")`
	}
	op.WaitFor("the lanes' table", `!document.querySelector('`+card+` table.lanes')?.hidden && `+
		text(card+` table.lanes caption`)+` === "Lanes"`)
	op.WaitFor("each lane's fans waiting", row("fanclub")+` === "70 %|1|0|0" && `+row("general")+` === "30 %|2|0|0"`)
	if got := op.Text(`[...document.querySelectorAll('` + card + ` table.lanes th[scope="col"]')].map((h) => h.textContent).join(",")`); got != "Lane,Share,Waiting,Active,Admitted" {
		t.Errorf("the table's column headers: %q", got)
	}

	// The rate up: every fan is admitted, each counted in their own lane.
	if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 20, MaxActive: 50,
		TokenTTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	op.WaitFor("each lane's admissions", row("fanclub")+` === "70 %|0|1|1" && `+row("general")+` === "30 %|0|2|2"`)
	q, err := c.Queue(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Lanes) != 2 || q.Lanes[0].Admitted != 1 || q.Lanes[1].Admitted != 2 {
		t.Errorf("GET queue's lanes: %+v", q.Lanes)
	}
}
