package http

import (
	"bytes"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/salereport"
)

// The after-sale report (booking.Catalog.SaleReport): JSON for the console and scripts, CSV for a spreadsheet.

func (s *Server) saleReport(c *fiber.Ctx) error {
	r, err := s.report(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(r)
}

func (s *Server) saleReportCSV(c *fiber.Ctx) error {
	r, err := s.report(c)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := salereport.WriteCSV(&b, r); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="report-`+r.ShowID+`.csv"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(b.Bytes())
}

func (s *Server) report(c *fiber.Ctx) (salereport.Report, error) {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return salereport.Report{}, err
	}
	return s.svc.SaleReport(c.UserContext(), id)
}
