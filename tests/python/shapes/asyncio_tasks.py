"""asyncio with many tasks; tick() is a plain call inside each task."""
import asyncio


def tick():
    pass


async def job(i):
    tick()
    await asyncio.sleep(0)
    tick()
    return i


async def main():
    return sum(await asyncio.gather(*(job(i) for i in range(300))))


print(asyncio.run(main()))
print("count tick", 600)
