/**
 * One row of a list of bars (`ul.rollout`): a label, a bar whose parts are shares of `total`
 * (each part a CSS class, which gives its colour), and the words beside it. The bar is a picture
 * of the words, which are what a screen reader reads (the bar itself is hidden from it).
 */
export function ShareBar({ label, parts, total, words }: { label: string; parts: Array<[className: string, count: number]>; total: number; words: string }) {
  return (
    <li className="rollout-row">
      <span className="rollout-label">{label}</span>
      <span className="rollout-bar" aria-hidden="true">
        {parts.map(([c, n]) => <span key={c} className={c} style={{ width: `${total === 0 ? 0 : (100 * n) / total}%` }} />)}
      </span>
      <span className="rollout-words">{words}</span>
    </li>
  );
}
