import type { TestApp } from './test-app';

/** The value of one sample (name with its labels exactly as exposed), 0 when absent. */
export function metricSample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** `GET /metrics` of an app started without METRICS_TOKEN. */
export async function scrapeMetrics(t: TestApp): Promise<string> {
  return (await t.http.get('/metrics').expect(200)).text;
}
