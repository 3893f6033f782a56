// The overview's bar chart, drawn on the server as SVG: a page with no script and no network gets
// it, it inherits the page's colours (light and dark) from site.css, and no charting library has to
// be kept up to date for thirty bars. This module only computes the geometry; the template
// (views/owner-overview.njk) writes the elements, escaping as every page does.
import { OUTCOMES, type DayCounts, type Outcome } from '../../shared/owners/overview.ts';

export const OUTCOME_WORDS: Record<Outcome, string> = {
  delivered: 'delivered',
  spam: 'held as spam',
  failed: 'bounced or failed',
  other: 'waiting or not emailed',
};

const WIDTH = 640;
const HEIGHT = 200;
const LEFT = 36; // room for the scale's numbers
const RIGHT = 18; // room for the last day's name
const BOTTOM = 22; // room for the days
const TOP = 8;

/** The smallest of 1, 2, 5 × 10^n at or above `value`: a scale that reads easily. */
function roundUp(value: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(1, value)));
  return [1, 2, 5, 10].map((step) => step * power).find((step) => step >= value) ?? value;
}

const describe = (day: DayCounts) => {
  const total = OUTCOMES.reduce((sum, outcome) => sum + day[outcome], 0);
  if (total === 0) return `${day.day}: no messages`;
  const parts = OUTCOMES.filter((outcome) => day[outcome] > 0).map((outcome) => `${day[outcome]} ${OUTCOME_WORDS[outcome]}`);
  return `${day.day}: ${total} message${total === 1 ? '' : 's'} (${parts.join(', ')})`;
};

export function barChart(days: DayCounts[]) {
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const max = roundUp(Math.max(1, ...days.map((day) => OUTCOMES.reduce((sum, outcome) => sum + day[outcome], 0))));
  const slot = (WIDTH - LEFT - RIGHT) / Math.max(1, days.length);
  const round = (value: number) => Math.round(value * 10) / 10;
  const bars = days.map((day, index) => {
    let base = HEIGHT - BOTTOM;
    const segments = [];
    for (const outcome of OUTCOMES) {
      const height = (day[outcome] / max) * plotHeight;
      if (height <= 0) continue;
      base -= height;
      segments.push({ outcome, y: round(base), height: round(height) });
    }
    return {
      x: round(LEFT + index * slot + slot * 0.15),
      width: round(slot * 0.7),
      segments,
      label: describe(day),
      // Every seventh day named under the axis, counted back from today so that today is one.
      tick: (days.length - 1 - index) % 7 === 0 ? { x: round(LEFT + index * slot + slot / 2), text: day.day.slice(5) } : null,
    };
  });
  // Whole numbers only: no line at 2.5 messages.
  const scale = (Number.isInteger(max / 2) ? [0, max / 2, max] : [0, max]).map((value) => ({ value, y: round(HEIGHT - BOTTOM - (value / max) * plotHeight) }));
  return { width: WIDTH, height: HEIGHT, left: LEFT, bottom: HEIGHT - BOTTOM, axisY: HEIGHT - BOTTOM + 15, bars, scale };
}
