/**
 * A log stream's token usage: input, output, cache read and cache creation tokens per UTC day, and
 * the day's cost, over a chosen range of days. Loaded on demand with the charting code.
 */
import { type FormEvent, useMemo } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { RunHeader, useRunInfo } from '../components/RunHeader.tsx';
import { SeriesChart } from '../components/SeriesChart.tsx';
import { get, post } from '../lib/api.ts';
import type { ModelSpend, TokenUsagePage as Page } from '../lib/api-types.ts';
import { colourOf, compactCounts } from '../lib/dashboard-view.ts';
import { formatCost, formatCostTicks, formatCount } from '../lib/format.ts';
import { TOKEN_KINDS, dailyUsage, dayOf, dayStart, usageRequest } from '../lib/token-usage.ts';
import { useApi } from '../lib/use-api.ts';
import '../dashboards.css';

const DAY = 86_400;

/** Every page of the range's records (a page holds up to 1,000 days). */
async function allUsage(path: string, from: string, to: string) {
  const records: Page['token_usages'] = [];
  let token: number | null = 0;
  while (token !== null) {
    const page: Page = await post<Page>(path, usageRequest(from, to, token));
    records.push(...page.token_usages);
    token = page.next_starting_token ?? null;
  }
  return records;
}

/**
 * Beside the log stream's own usage: what Spanbase itself spent calling models for the project
 * (judges, experiments, Signals, the playground), per day and purpose. A model without a price is
 * counted as such, never as $0.
 */
/** Model calls are cheap: small sums keep six decimals, so they never read as $0. */
const spendMoney = (v: number) => (v === 0 ? '$0' : `$${v.toFixed(v < 0.01 ? 6 : 2)}`);

function ModelSpendSection({ projectId, from }: { projectId: string; from: string }) {
  const days = Math.min(366, Math.max(1, Math.round((Date.now() / 1000 - (dayStart(from) ?? 0)) / DAY) + 1));
  const spend = useApi(`spend/${projectId}/${days}`, () =>
    get<ModelSpend>(`/v2/projects/${projectId}/model_calls/spend?days=${days}`),
  );
  return (
    <section className="section" aria-labelledby="spend-title">
      <h2 id="spend-title">Spanbase's model calls for this project</h2>
      {spend.error && <ErrorNote error={spend.error} retry={spend.reload} />}
      {!spend.data && !spend.error && <Loading what="model spend" />}
      {spend.data?.days.length === 0 && <p className="muted">No model calls since {spend.data.from_day}.</p>}
      {spend.data && spend.data.days.length > 0 && (
        <table className="table model-spend">
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Purpose</th>
              <th scope="col" className="num">
                Calls
              </th>
              <th scope="col" className="num">
                Errors
              </th>
              <th scope="col" className="num">
                Input tokens
              </th>
              <th scope="col" className="num">
                Output tokens
              </th>
              <th scope="col" className="num">
                Cost
              </th>
            </tr>
          </thead>
          <tbody>
            {[...spend.data.days].reverse().map((d) => (
              <tr key={`${d.day}/${d.purpose}`} data-purpose={d.purpose}>
                <td>{d.day}</td>
                <td>{d.purpose}</td>
                <td className="num">{formatCount(d.calls)}</td>
                <td className="num">{formatCount(d.errors)}</td>
                <td className="num">{formatCount(d.tokens_in)}</td>
                <td className="num">{formatCount(d.tokens_out)}</td>
                <td className="num">
                  {spendMoney(d.cost_usd)}
                  {d.unpriced_calls > 0 && (
                    <span className="muted"> + {d.unpriced_calls} without a price</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function TokenUsagePage() {
  const { projectId = '', runId = '' } = useParams();
  const info = useRunInfo(projectId, 'log_streams', runId);
  const [params, setParams] = useSearchParams();
  const today = dayOf(Math.floor(Date.now() / 1000));
  const from =
    dayStart(params.get('from') ?? '') !== null
      ? params.get('from')!
      : dayOf(Math.floor(Date.now() / 1000) - 29 * DAY);
  const to = dayStart(params.get('to') ?? '') !== null ? params.get('to')! : today;
  const path = `/v2/projects/${projectId}/log_streams/${runId}/logstream_insights/token_usage`;
  const usage = useApi(`usage/${runId}/${from}/${to}`, () => allUsage(path, from, to));
  const daily = useMemo(() => (usage.data ? dailyUsage(usage.data, from, to) : null), [usage.data, from, to]);
  const tokenSeries = useMemo(
    () =>
      daily
        ? TOKEN_KINDS.map(([k, label], i) => ({ label, colour: colourOf(i), values: daily.tokens[k] }))
        : [],
    [daily],
  );
  const costSeries = useMemo(
    () => (daily ? [{ label: 'Cost', colour: colourOf(4), values: daily.cost }] : []),
    [daily],
  );
  const apply = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    setParams({ from: String(f.get('from') ?? ''), to: String(f.get('to') ?? '') });
  };
  const badRange = (dayStart(to) ?? 0) < (dayStart(from) ?? 0);
  return (
    <>
      <RunHeader projectId={projectId} kind="log_streams" runId={runId} info={info} />
      <div className="section-head">
        <h1>Token usage</h1>
        <form className="custom-range" onSubmit={apply} key={`${from}/${to}`}>
          <label>
            <span>From (UTC day)</span>
            <input type="date" name="from" defaultValue={from} max={today} />
          </label>
          <label>
            <span>To (UTC day)</span>
            <input type="date" name="to" defaultValue={to} />
          </label>
          <button type="submit" className="button small">
            Show
          </button>
        </form>
      </div>
      {badRange && (
        <p className="form-error" role="alert">
          The range ends before it starts.
        </p>
      )}
      {usage.error && <ErrorNote error={usage.error} retry={usage.reload} />}
      {!daily && !usage.error && <Loading what="token usage" />}
      {daily && (
        <div className="usage" data-ready={usage.fresh ? 'true' : 'false'}>
          <dl className="usage-totals" aria-label="Totals for the range">
            {TOKEN_KINDS.map(([k, label], i) => (
              <div key={k} data-kind={k} data-value={daily.totals[k]}>
                <dt>
                  <span className="swatch" style={{ background: colourOf(i) }} aria-hidden="true" />
                  {label} tokens
                </dt>
                <dd>{formatCount(daily.totals[k])}</dd>
              </div>
            ))}
            <div data-kind="cost" data-value={daily.totals.cost ?? ''}>
              <dt>
                <span className="swatch" style={{ background: colourOf(4) }} aria-hidden="true" />
                Cost
              </dt>
              <dd>{formatCost(daily.totals.cost)}</dd>
            </div>
          </dl>
          <section className="widget usage-chart" aria-labelledby="tokens-title">
            <header className="widget-head">
              <h3 id="tokens-title">Tokens per day</h3>
            </header>
            <div className="widget-body">
              <SeriesChart
                buckets={daily.days}
                bucketSeconds={DAY}
                series={tokenSeries}
                kind="bar"
                ticks={compactCounts}
                label={`Input, output, cache read and cache creation tokens per day from ${from} to ${to}`}
              />
            </div>
          </section>
          <section className="widget usage-chart" aria-labelledby="cost-title">
            <header className="widget-head">
              <h3 id="cost-title">Cost per day</h3>
            </header>
            <div className="widget-body">
              <SeriesChart
                buckets={daily.days}
                bucketSeconds={DAY}
                series={costSeries}
                kind="line"
                ticks={formatCostTicks}
                label={`Cost in dollars per day from ${from} to ${to}`}
              />
            </div>
          </section>
        </div>
      )}
      <ModelSpendSection projectId={projectId} from={from} />
    </>
  );
}
