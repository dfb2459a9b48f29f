/**
 * Advice with the evidence it rests on, and the advice withheld with why (docs/api.md,
 * `advice` and `advice_withheld`; analysis/evidence.py).
 *
 * Each piece of advice is a list item: its prose, code after the first line break
 * (preformatted), then its evidence ("input share of step time: 41.2 %"). Below the list, a
 * collapsed "Not advised" part names each withheld piece and what the profile shows instead
 * (e.g. the pipeline already ends in prefetch). Texts come from the profile: shown as text.
 *
 * Hooks: the list (`testid`), each item (`itemTestid`, data-key) with advice-evidence items
 * (data-what; the value in advice-evidence-value); advice-withheld (details) with
 * advice-withheld-item (data-key).
 */
import { list, record, str } from "./format";

export interface EvidenceItem {
  readonly what: string;
  readonly value: string;
}

export interface AdviceItem {
  readonly key: string;
  readonly text: string;
  readonly evidence: readonly EvidenceItem[];
}

export interface WithheldItem {
  readonly key: string;
  readonly reason: string;
}

/** The `advice` list of a document; documents without it fall back to `fallback` texts. */
export function adviceOf(value: unknown, fallback: unknown = undefined): readonly AdviceItem[] {
  if (!Array.isArray(value)) {
    return list(fallback).map((text) => ({ key: "", text: str(text), evidence: [] }));
  }
  return value.map((item) => {
    const advice = record(item);
    return {
      key: str(advice["key"]),
      text: str(advice["text"]),
      evidence: list(advice["evidence"]).map((e) => ({
        what: str(record(e)["what"]),
        value: str(record(e)["value"]),
      })),
    };
  });
}

export function withheldOf(value: unknown): readonly WithheldItem[] {
  return list(value).map((item) => ({
    key: str(record(item)["key"]),
    reason: str(record(item)["reason"]),
  }));
}

function AdviceEntry({ advice, testid }: { advice: AdviceItem; testid: string }) {
  const cut = advice.text.indexOf("\n");
  const prose = cut < 0 ? advice.text : advice.text.slice(0, cut);
  const code = cut < 0 ? "" : advice.text.slice(cut + 1);
  return (
    <li class="recommendation" data-testid={testid} data-key={advice.key}>
      <p>{prose}</p>
      {code.trim() ? (
        <pre class="code-block">
          <code>{code}</code>
        </pre>
      ) : null}
      {advice.evidence.length ? (
        <ul class="evidence" aria-label="Evidence">
          {advice.evidence.map((e, index) => (
            <li key={index} data-testid="advice-evidence" data-what={e.what}>
              <span class="evidence-what">{e.what}: </span>
              <span class="evidence-value" data-testid="advice-evidence-value">
                {e.value}
              </span>
            </li>
          ))}
        </ul>
      ) : null}
    </li>
  );
}

export function AdviceList({
  advice,
  withheld,
  testid,
  itemTestid,
  empty,
}: {
  advice: readonly AdviceItem[];
  withheld: readonly WithheldItem[];
  testid: string;
  itemTestid: string;
  empty: string;
}) {
  return (
    <div class="advice">
      {advice.length ? (
        <ol class="recommendations" data-testid={testid}>
          {advice.map((item, index) => (
            <AdviceEntry advice={item} testid={itemTestid} key={index} />
          ))}
        </ol>
      ) : (
        <p class="hint" data-testid={`no-${testid}`}>
          {empty}
        </p>
      )}
      {withheld.length ? (
        <details class="advice-withheld" data-testid="advice-withheld">
          <summary>Not advised ({withheld.length}), and why</summary>
          <ul>
            {withheld.map((item, index) => (
              <li key={index} data-testid="advice-withheld-item" data-key={item.key}>
                {item.reason}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}
