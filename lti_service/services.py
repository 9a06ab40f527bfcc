"""Everything the web app and the workers share, built once per process from the Config."""

from __future__ import annotations

from dataclasses import dataclass

from .config import Config
from .db import Database
from .keys import KeyStore
from .lti.ags import AgsClient
from .lti.launch import JwksCache, LaunchServices
from .lti.login import Logins
from .lti.storage import DatabaseLaunchDataStorage
from .lti.tool_conf import DatabaseToolConf
from .migrate import upgrade
from .platforms import PlatformDirectory


@dataclass
class Services:
    config: Config
    db: Database
    keys: KeyStore
    ags: AgsClient
    launches: LaunchServices
    platforms: PlatformDirectory

    @classmethod
    def from_config(cls, config: Config) -> Services:
        config.data_dir.mkdir(parents=True, exist_ok=True)
        upgrade(config.sqlalchemy_url)
        db = Database(config.sqlalchemy_url)
        keys = KeyStore(config.keys_dir)
        keys.signing_key()  # generated on first start
        platforms = PlatformDirectory(db)
        tool_conf, storage = DatabaseToolConf(platforms), DatabaseLaunchDataStorage(db)
        launches = LaunchServices(
            tool_conf, storage, Logins(storage, tool_conf), JwksCache(config.http_timeout), config.clock_skew
        )
        return cls(config, db, keys, AgsClient(keys, config.http_timeout), launches, platforms)
