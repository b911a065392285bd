import { type ReactNode, createContext, useContext } from 'react';
import { Link, Outlet } from 'react-router';
import type { User } from '../lib/api-types.ts';
import { AccessProvider, useAccess } from '../lib/access.tsx';
import { get, post } from '../lib/api.ts';
import { useApi } from '../lib/use-api.ts';
import { ProjectNotFound } from '../pages/NotFoundPage.tsx';
import { ErrorNote } from './ErrorNote.tsx';

const UserContext = createContext<User | null>(null);
export const useUser = () => useContext(UserContext);

async function logOut() {
  try {
    await post('/v2/console/logout');
  } finally {
    window.location.assign('/login');
  }
}

/**
 * The page, marked with the caller's role on its project once known (for tests and tools); a URL
 * naming a project the caller cannot see shows one message instead of each of the page's requests
 * failing in turn.
 */
function Main({ children }: { children: ReactNode }) {
  const { role, missing } = useAccess();
  return (
    <main id="main" className="page" data-project-role={role ?? undefined}>
      {missing ? <ProjectNotFound /> : children}
    </main>
  );
}

/**
 * Every signed-in page: the top bar (home, who is signed in, log out) above the page, and what the
 * caller may do on the page's project (lib/access.tsx).
 */
export function Layout() {
  const me = useApi('me', () => get<User>('/v2/current_user'));
  return (
    <UserContext.Provider value={me.data ?? null}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand" aria-label="Spanbase projects">
          <span className="brand-mark" aria-hidden="true" />
          <span className="brand-name">Spanbase</span>
        </Link>
        <nav className="topbar-right" aria-label="Account">
          <Link to="/datasets" className="button ghost">
            Datasets
          </Link>
          <Link to="/scorers" className="button ghost">
            Scorers
          </Link>
          <Link to="/settings" className="button ghost">
            Settings
          </Link>
          {me.data && <span className="who">{me.data.email}</span>}
          <button type="button" className="button ghost" onClick={logOut}>
            Log out
          </button>
        </nav>
      </header>
      <AccessProvider>
        <Main>{me.error ? <ErrorNote error={me.error} retry={me.reload} /> : <Outlet />}</Main>
      </AccessProvider>
    </UserContext.Provider>
  );
}
