-- What the tests publish to the change feed (Sources/SovariaPostgREST/ChangeFeed.sql, applied
-- before this file): every table a test syncs, each row visible to its owner, notifying: the
-- server's long poll waits on `sovaria_changes` (restserver.py). Test equipment.
SELECT sovaria_publish('public.notes', key_column => 'id', visibility_column => 'owner', notify => true);
SELECT sovaria_publish('public.lists', key_column => 'id', visibility_column => 'owner', notify => true);
SELECT sovaria_publish('public.items', key_column => 'id', visibility_column => 'owner', notify => true);
SELECT sovaria_publish('public.tasks', key_column => 'id', visibility_column => 'owner', notify => true);
-- A team's documents: each change reaches the users in its team at its position.
SELECT sovaria_publish('public.team_docs', key_column => 'id', visibility_column => 'team', notify => true,
    membership => 'public.team_members', membership_user_column => 'member', membership_team_column => 'team');
GRANT SELECT ON public.sovaria_changes, public.sovaria_feed TO authenticated;
REVOKE ALL ON public.sovaria_changes, public.sovaria_feed FROM anon;
-- For POST /_test/reset only.
GRANT TRUNCATE ON public.sovaria_changes, public.sovaria_memberships TO authenticator;
