// The Reports panel: pick a show and open its after-sale report (a page of its own, /admin/shows/{id}/report,
// with charts that print) or download it as CSV.
import { $ } from "./dom.js";
import { syncShows } from "./picker.js";

export function mount() {
  const select = $("report-show");
  const update = () => {
    const id = encodeURIComponent(select.value);
    $("report-open").href = id ? `/admin/shows/${id}/report` : "#";
    $("report-csv").href = id ? `/admin/v1/shows/${id}/report.csv` : "#";
  };
  select.addEventListener("change", update);
  return {
    render(snap) {
      syncShows(select, snap.shows);
      update();
    },
  };
}
