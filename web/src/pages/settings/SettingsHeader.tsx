import { NavLink } from 'react-router';
import { Crumbs } from '../../components/Crumbs.tsx';

const TABS = [
  { to: '/settings/api-keys', label: 'API keys' },
  { to: '/settings/users', label: 'Users and groups' },
  { to: '/settings/integrations', label: 'Integrations' },
];

/** The account-wide settings pages: title and tabs. */
export function SettingsHeader({ current }: { current: string }) {
  return (
    <>
      <Crumbs items={[{ label: 'Projects', to: '/' }, { label: 'Settings' }]} />
      <div className="page-head">
        <h1>Settings</h1>
      </div>
      <nav className="tabs" aria-label="Settings">
        {TABS.map((t) => (
          <NavLink key={t.to} to={t.to} className={({ isActive }) => (isActive ? 'tab active' : 'tab')}>
            {t.label}
          </NavLink>
        ))}
      </nav>
      <h2 className="visually-hidden">{current}</h2>
    </>
  );
}
