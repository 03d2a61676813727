/**
 * The user of a request (k8s.io/apiserver `user.Info`): who authentication found, and the
 * anonymous user when no credential was presented.
 *
 * @module
 */

/** An authenticated user (k8s.io/apiserver `user.Info`). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** The user of a request without any credential. */
export const ANONYMOUS: UserInfo = {
  name: "system:anonymous",
  groups: ["system:unauthenticated"],
  extra: {},
};

/** `user` in the `system:authenticated` group, as Go's authenticators add it. */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (
    user.name === ANONYMOUS.name ||
    user.groups.includes("system:authenticated") ||
    user.groups.includes("system:unauthenticated")
  ) return user;
  return { ...user, groups: [...user.groups, "system:authenticated"] };
}
