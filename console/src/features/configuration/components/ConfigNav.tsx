import { NavLink } from 'react-router';

/** The configuration's pages: its form (with the rollout), its history and its schema. */
export function ConfigNav({ product }: { product: string }) {
  const base = `/products/${encodeURIComponent(product)}/config`;
  return (
    <nav aria-label="Configuration" className="tabs subtabs">
      <NavLink to={base} end>Form</NavLink>
      <NavLink to={`${base}/history`}>History</NavLink>
      <NavLink to={`${base}/schema`}>Schema</NavLink>
    </nav>
  );
}
