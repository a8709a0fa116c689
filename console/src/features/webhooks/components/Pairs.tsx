import type { Pair } from '../utils/form.js';

/**
 * Names and values (query parameters, headers, form fields), a row each, every input labelled
 * with what it is and its row ("Header 2 name"), so that each is found by its name.
 */
export function Pairs({ legend, what, rows, onChange, hint }: { legend: string; what: string; rows: Pair[]; onChange: (rows: Pair[]) => void; hint?: string }) {
  const set = (i: number, change: Partial<Pair>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  return (
    <fieldset>
      <legend>{legend}</legend>
      {hint && <p className="hint">{hint}</p>}
      {rows.length === 0 && <p className="hint">None.</p>}
      {rows.map((r, i) => (
        // Rows have no identity but their place: the inputs are controlled, so a removal re-renders them.
        <div key={i} className="pair">
          <label>{`${what} ${i + 1} name`}<input value={r.name} maxLength={100} onChange={(e) => set(i, { name: e.target.value })} /></label>
          <label>{`${what} ${i + 1} value`}<input value={r.value} maxLength={2048} onChange={(e) => set(i, { value: e.target.value })} /></label>
          <button type="button" className="secondary" onClick={() => onChange(rows.filter((_, j) => j !== i))}>{`Remove ${what.toLowerCase()} ${i + 1}`}</button>
        </div>
      ))}
      <button type="button" className="secondary" onClick={() => onChange([...rows, { name: '', value: '' }])}>{`Add ${what.toLowerCase()}`}</button>
    </fieldset>
  );
}
